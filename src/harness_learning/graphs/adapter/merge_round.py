"""The adapter's `merge` node, between `race` and `select` (`AdaptConfig.merge`): it fills the
round's merge slot through `rounds.make_candidate` like any slot (its Proposer,
`parents.MergeProposer`, merges the two best valid candidates' edits) and appends its view to
the state's candidates, where `select` finds it like any other. Off, it passes through.

A node of its own so that its work is checkpointed before `select`: a run resumed after it (or
at `select`'s approval gate) finds the merged view in the state and neither judges nor logs the
merge again. A re-run of the node itself after a crash reuses the logged merge draft and its
stored evaluations (`make_candidate`, `evaluate_cached`).
"""

from __future__ import annotations

from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import round_candidates
from harness_learning.graphs.adapter.rounds import make_candidate, slot_payload
from harness_learning.graphs.adapter.slots import MERGE, round_slots
from harness_learning.graphs.adapter.state import AdapterState


def make_merge_node(ctx: AdapterContext):
    async def merge_node(state: AdapterState) -> dict:
        cfg = ctx.config
        if not cfg.merge:
            return {}
        slot = next(s for s in round_slots(cfg, state) if s.origin == MERGE)
        mine = round_candidates(cfg, state)
        if any(c["index"] == slot.index for c in mine):
            return {}  # the round's merge is in the state already: never appended twice
        merged = await make_candidate(ctx, slot_payload(cfg, state, slot), candidates=mine)
        # `candidates` adds up (state.py): the merged view joins the round's others
        return {} if merged is None else {"candidates": [merged]}

    return merge_node
