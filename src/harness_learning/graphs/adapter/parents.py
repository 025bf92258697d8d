"""What GEPA does with a round's candidates beyond picking one, as options of our adapter:

- `selection_archive`: every valid version's per-problem scores on the round's selection
  problems, from the log (the `pareto` policy draws the next parent from its front);
- `MergeProposer` (`AdaptConfig.merge`): the two best valid candidates' SEARCH/REPLACE edits
  put together as one more completion (the first's blocks, then the second's), the Proposer of
  the round's merge slot, judged by the same judge as a Proposer sample: parsed, applied to
  the parent, checked, evaluated. When the
  second's SEARCH text was changed by the first, the merge does not apply and is an invalid
  candidate with its reason, like any other.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from harness_learning.graphs.adapter.policies import Archive
from harness_learning.graphs.adapter.propose import CandidateProposal, ProposalContext
from harness_learning.graphs.adapter.slots import MERGE
from harness_learning.harnesses.llm.completion import Completion
from harness_learning.harnesses.store import LogStore, proposal_id

MERGE_NOTE = "merge of candidates {a} and {b} (both edits applied to the parent)"


def selection_archive(store: LogStore, ids: list[str], current_sha: str) -> Archive:
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


def merge_pair(mine: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...] | None:
    """The round's two best valid candidates with different versions, best first (ties to
    the lower index), or None without two."""
    best = sorted((c for c in mine if c["valid"] and c["selection_score"] is not None),
                  key=lambda c: (-c["selection_score"], c["index"]))
    second = next((c for c in best[1:] if c["sha"] != best[0]["sha"]), None) if best else None
    return None if second is None else (best[0], second)


class MergeProposer:
    """Fills the merge's slot (`AdaptConfig.merge`, edit format `search_replace`): the round's
    two best valid candidates' completions, put together (`merged_completion`); nothing
    without two. The `merge` node sends the slot once the round's others are judged
    (merge_round.py)."""

    async def propose(self, context: ProposalContext) -> list[CandidateProposal]:
        cfg, store = context.run.config, context.run.store
        pair = merge_pair(context.candidates) if cfg.edit_format == "search_replace" else None
        if pair is None:
            return []
        a, b = pair
        texts = [(await store.aget_proposal(proposal_id(context.round, c["index"]))).completion
                 for c in (a, b)]
        note = MERGE_NOTE.format(a=a["index"], b=b["index"])
        completion = Completion(text=merged_completion(*texts), prompt_tokens=0,
                                completion_tokens=0, latency_s=0.0, finish_reason="stop",
                                cached=True, model="merge")
        return [CandidateProposal(MERGE, [{"role": "system", "content": note}], completion,
                                  cfg.edit_format)]
