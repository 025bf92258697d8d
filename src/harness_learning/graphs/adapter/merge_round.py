"""The adapter's `merge` node, between `race` and `select` (`AdaptConfig.merge`): it judges the
merge of the round's two best valid candidates (`parents.merge_candidate`) and appends its view
to the state's candidates, where `select` finds it like any other. Off, it passes through.

A node of its own so that its work is checkpointed before `select`: a run resumed after it (or
at `select`'s approval gate) finds the merged view in the state and neither judges nor logs the
merge again. A re-run of the node itself after a crash reuses the logged merge draft and its
stored evaluations (`merge_candidate`, `evaluate_cached`).
"""

from __future__ import annotations

from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import round_candidates
from harness_learning.graphs.adapter.parents import merge_candidate
from harness_learning.graphs.adapter.rounds import make_candidate
from harness_learning.graphs.adapter.state import AdapterState


def make_merge_node(ctx: AdapterContext):
    async def merge_node(state: AdapterState) -> dict:
        cfg = ctx.config
        if not cfg.merge:
            return {}
        mine = round_candidates(cfg, state)
        if any(c["index"] == cfg.samples_per_round for c in mine):
            return {}  # the round's merge is in the state already: never appended twice
        merged = await merge_candidate(ctx, state, mine, make_candidate)
        # `candidates` adds up (state.py): the merged view joins the round's others
        return {} if merged is None else {"candidates": [merged]}

    return merge_node
