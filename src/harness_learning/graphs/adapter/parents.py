"""What GEPA does with a round's candidates beyond picking one, as options of our adapter:

- `selection_archive`: every valid version's per-problem scores on the round's selection
  problems, from the log (the `pareto` policy draws the next parent from its front);
- `merge_candidate` (`AdaptConfig.merge`): the two best valid candidates' SEARCH/REPLACE edits
  put together as one more completion (the first's blocks, then the second's) and judged by the
  same judge as a Proposer sample: parsed, applied to the parent, checked, evaluated. When the
  second's SEARCH text was changed by the first, the merge does not apply and is an invalid
  candidate with its reason, like any other.
"""

from __future__ import annotations

import random
from typing import Any

from harness_learning.graphs.adapter.policies import Archive
from harness_learning.graphs.adapter.propose import MERGE
from harness_learning.harnesses.llm.completion import Completion
from harness_learning.harnesses.store import new_proposal, proposal_id

MERGE_NOTE = "merge of candidates {a} and {b} (both edits applied to the parent)"


def selection_archive(store: Any, ids: list[str], current_sha: str) -> Archive:
    """Per version, its score on each of `ids`: versions scored on all of them (the current
    one and every candidate that completed its selection evaluation), invalid ones left out."""
    wanted = set(ids)
    valid = {p.candidate_sha for p in store.iter_proposals() if p.valid and p.candidate_sha}
    valid.add(current_sha)
    archive: dict[str, dict[str, float]] = {}
    for ev in store.iter_evaluations(purpose="selection"):
        if ev.sha in valid and ev.problem_id in wanted and ev.result.score is not None:
            archive.setdefault(ev.sha, {})[ev.problem_id] = ev.result.score
    return {sha: scores for sha, scores in archive.items() if len(scores) == len(wanted)}


def parent_draw(seed: int, round_: int) -> float:
    """The pareto policy's random number for a round: the same on resume."""
    return random.Random(f"pareto:{seed}:{round_}").random()


def merged_completion(first: str, second: str) -> str:
    return f"{first.rstrip()}\n\n{second.strip()}\n"


async def merge_candidate(ctx: Any, state: dict, mine: list[dict],
                          make_candidate: Any) -> dict | None:
    """Judge the merge of the round's two best valid candidates (None if there are not two
    with different versions); logged as proposal index `samples_per_round` and judged by
    `make_candidate` (the adapter's candidate node, passed in: this module sits below it).
    The `merge` node's work (merge_round.py); a logged merge draft is reused, not redrawn."""
    cfg, round_ = ctx.config, state["round"]
    if cfg.edit_format != "search_replace":
        return None
    best = sorted((c for c in mine if c["valid"] and c["selection_score"] is not None),
                  key=lambda c: (-c["selection_score"], c["index"]))
    pair = [best[0], next((c for c in best[1:] if c["sha"] != best[0]["sha"]), None)] if best else []
    if len(pair) < 2 or pair[1] is None:
        return None
    a, b = pair
    index = cfg.samples_per_round
    if await ctx.store.aget_proposal(proposal_id(round_, index)) is None:
        texts = [(await ctx.store.aget_proposal(proposal_id(round_, c["index"]))).completion for c in (a, b)]
        note = MERGE_NOTE.format(a=a["index"], b=b["index"])
        completion = Completion(text=merged_completion(*texts), prompt_tokens=0,
                                completion_tokens=0, latency_s=0.0, finish_reason="stop",
                                cached=True, model="merge")
        await ctx.store.aput_proposal(new_proposal(
            round_, index, [{"role": "system", "content": note}], completion, cfg.edit_format,
            parent_sha=state["current_sha"], origin=MERGE,
            parent_score=state.get("current_selection_score")))
    return await make_candidate(ctx, {
        "round": round_, "index": index, "current_sha": state["current_sha"],
        "report": state.get("report", ""), "selection_ids": state["selection_ids"],
        "feedback_ids": state["feedback_ids"], "parent_score": state.get("current_selection_score")})
