"""One round of the adapter, top to bottom (graph.py wires it):

1. `evaluate_current` (nodes.py) evaluates the parent, writes the report and plans the round's
   slots once (`slots.plan_slots`): the Proposer's samples, the merge's, the operators' and
   the experience library's, each typed (`slots.Slot`).
2. `fan_out` sends one `candidate` node per slot (the merge's waits for the others).
3. `candidate` (`make_candidate`): the slot's Proposer (`PROPOSERS`) proposes, or the logged
   proposal is reused; the round's judge (`RoundJudge`) checks it; it is logged, and evaluated
   on the selection problems, or left for the race with policy "racing".
4. `race` (race_round.py) evaluates the drafts together; `merge` (merge_round.py) fills the
   merge slot from the judged candidates, through `make_candidate` like any other slot;
   `select` (nodes.py) applies the policy to the slots offered to it.

Like every node, idempotent against the execution log (nodes.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.types import Send

from harness_learning.evals.judge import Outcome, check_candidate, settle_candidate
from harness_learning.evals.memorisation import Exposure
from harness_learning.evals.result import EvalResult
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.experience_propose import ExperienceProposer
from harness_learning.graphs.adapter.nodes import (
    candidate_view,
    evaluate_cached,
    probe_of,
    round_exposure,
)
from harness_learning.graphs.adapter.parents import MergeProposer
from harness_learning.graphs.adapter.propose import (
    LLMProposer,
    OperatorProposer,
    ProposalContext,
    Proposer,
)
from harness_learning.graphs.adapter.run_memory import judged_versions, refuse_repeats
from harness_learning.graphs.adapter.slots import (
    EXPERIENCE,
    MERGE,
    OPERATOR,
    PROPOSER,
    Slot,
    round_slots,
    slot_of,
)
from harness_learning.graphs.adapter.state import AdapterState, CandidateView
from harness_learning.harnesses.store import new_proposal, proposal_id

PROPOSERS: dict[str, Proposer] = {PROPOSER: LLMProposer(), OPERATOR: OperatorProposer(),
                                  MERGE: MergeProposer(), EXPERIENCE: ExperienceProposer()}
"""Slot origin -> the Proposer that fills it."""


class RoundJudge:
    """The judge of a round's candidates against their parent: the static checks with the
    refusal of a repeat of a judged version (`check`), and the settling of an evaluated
    candidate with the memorisation probe (`settle`), both against what the round's report
    showed (`exposure`). Proposers that judge while proposing get it in their context."""

    def __init__(self, ctx: AdapterContext, round_: int, parent_source: str,
                 exposure: Exposure, judged: dict[str, tuple[str, int]]) -> None:
        self.ctx, self.round, self.parent_source = ctx, round_, parent_source
        self.exposure, self.judged = exposure, judged
        self.rules = {"track": ctx.task.track, "line_limit": ctx.config.line_limit}

    @classmethod
    async def open(cls, ctx: AdapterContext, payload: Mapping[str, Any]) -> RoundJudge:
        """The judge of the round `payload` belongs to (its parent `current_sha`, its report
        and problem ids), read from the log."""
        parent_source = await ctx.store.aget_version_source(payload["current_sha"])
        exposure = await round_exposure(ctx, payload)
        judged = await asyncio.to_thread(judged_versions, ctx.store, payload["round"])
        return cls(ctx, payload["round"], parent_source, exposure, judged)

    def check(self, text: str, finish_reason: str | None, edit_format: str) -> Outcome:
        """The judge's checks, then the refusal of a repeat of a judged version (whatever
        proposed it), so a repeat never reaches the Solver."""
        return refuse_repeats(check_candidate(self.parent_source, text, edit_format,
                                              finish_reason, exposure=self.exposure,
                                              **self.rules), self.judged, **self.rules)

    async def settle(self, outcome: Outcome, result: EvalResult, sha: str) -> Outcome:
        """`outcome` settled with its selection evaluation (`evals.judge.settle_candidate`)."""
        return await settle_candidate(outcome, result, exposure=self.exposure,
                                      probe=probe_of(self.ctx, sha, self.round), **self.rules)


def slot_payload(cfg: AdaptConfig, state: AdapterState, slot: Slot) -> dict[str, Any]:
    """The `candidate` node's input for `slot`: the round's facts and the slot."""
    return {"round": state["round"], "run_dir": str(cfg.path),
            "current_sha": state["current_sha"], "report": state.get("report", ""),
            "selection_ids": state["selection_ids"], "feedback_ids": state["feedback_ids"],
            "parent_score": state.get("current_selection_score"), "index": slot.index,
            "slot": slot.to_dict()}


def make_round_nodes(ctx: AdapterContext) -> dict[str, Any]:
    """The round's `fan_out` edge and `candidate` node, bound to the run's context."""
    cfg = ctx.config

    def fan_out(state: AdapterState) -> list[Send]:
        return [Send("candidate", slot_payload(cfg, state, slot))
                for slot in round_slots(cfg, state) if slot.origin != MERGE]

    async def candidate(payload: dict) -> dict:
        view = await make_candidate(ctx, payload)
        if view is None:
            return {}
        # Racing: a valid candidate waits in "drafts" for the race node (race_round.py).
        return {"drafts" if view.get("pending") else "candidates": [view]}

    return {"fan_out": fan_out, "candidate": candidate}


async def make_candidate(ctx: AdapterContext, payload: dict,
                         candidates: Sequence[Mapping[str, Any]] = ()) -> CandidateView | None:
    """Fill the payload's slot: its Proposer proposes (or the logged proposal is reused), the
    round's judge checks it (evals/judge.py), the outcome is logged. With policy "racing" a
    candidate that passed the checks and is offered to the policy is stored and left for the
    race node, its outcome in the view; otherwise it is evaluated on the selection problems
    here. None when the slot's Proposer had nothing to propose (a merge without two valid
    `candidates`, the round's judged ones)."""
    cfg, store = ctx.config, ctx.store
    slot = slot_of(cfg, payload)
    round_, index = payload["round"], slot.index
    parent_sha = payload["current_sha"]
    judge = await RoundJudge.open(ctx, payload)
    proposal = await store.aget_proposal(proposal_id(round_, index))
    if proposal is None:
        drafts = await PROPOSERS[slot.origin].propose(ProposalContext(
            ctx, slot, payload, judge.parent_source, judge, tuple(candidates)))
        if not drafts:
            return None
        drafted = drafts[0]  # a slot holds one candidate
        proposal = new_proposal(round_, index, drafted.messages, drafted.completion,
                                drafted.edit_format, parent_sha=parent_sha,
                                origin=drafted.origin, parent_score=payload["parent_score"])
        await store.aput_proposal(proposal)
        done = drafted.completion
        outcome = drafted.outcome if drafted.outcome is not None else judge.check(
            done.text, done.finish_reason, drafted.edit_format)
    else:  # resumed: the logged completion is checked again (the check is deterministic)
        outcome = judge.check(proposal.completion, proposal.finish_reason, proposal.edit_format)
    # Every candidate's diff is logged, invalid ones too (`harness-learn show/report` read it).
    await store.aappend_event("candidate_diff", {"proposal_id": proposal.id, "diff": outcome.diff})
    sha = None
    if outcome.needs_evaluation:
        sha = await store.aput_version(outcome.new_source, parent=parent_sha, round_=round_,
                                       note=f"candidate {index}")
        if cfg.policy == "racing" and not slot.training_only:
            # evaluated with the round's others by the race node
            return {**candidate_view(round_, index, proposal.id, sha, outcome, proposal.origin),
                    "pending": True, "outcome": outcome.to_dict()}
        result = await evaluate_cached(ctx, sha, ctx.dev_problems(payload["selection_ids"]),
                                       "selection", round_)
        outcome = await judge.settle(outcome, result, sha)
    view = candidate_view(round_, index, proposal.id, sha, outcome, proposal.origin)
    ctx.progress("candidate", {**view, "parent_score": payload["parent_score"],
                               "spent": await store.aspent()})
    await store.asettle_proposal(proposal.id, sha, outcome)
    return view
