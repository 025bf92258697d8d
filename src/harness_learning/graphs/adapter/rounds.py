"""One round's candidates: the fan-out that sends one `candidate` node per sample and
operator, and the candidate node's work (`make_candidate`): propose (or reuse the logged
proposal), judge, log, evaluate or leave for the race. Like every node, idempotent against the
execution log (nodes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.types import Send

from harness_learning.evals.judge import Outcome, check_candidate, settle_candidate
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.experience_propose import propose_any as propose
from harness_learning.graphs.adapter.memory import judged_versions, refuse_repeats
from harness_learning.graphs.adapter.nodes import (
    candidate_view,
    evaluate_cached,
    operator_index,
    probe_of,
    round_exposure,
    training_only,
)
from harness_learning.graphs.adapter.state import AdapterState, CandidateView
from harness_learning.harnesses.store import new_proposal, proposal_id


def make_round_nodes(ctx: AdapterContext) -> dict[str, Any]:
    """The round's `fan_out` edge and `candidate` node, bound to the run's context."""
    cfg = ctx.config

    def fan_out(state: AdapterState) -> list[Send]:
        shared = {"round": state["round"], "run_dir": str(cfg.path),
                  "current_sha": state["current_sha"], "report": state["report"],
                  "selection_ids": state["selection_ids"], "feedback_ids": state["feedback_ids"],
                  "parent_score": state["current_selection_score"]}
        llm = [Send("candidate", {**shared, "index": i}) for i in range(cfg.samples_per_round)]
        ops = [Send("candidate", {**shared, "index": operator_index(cfg, j), "operator": name})
               for j, name in enumerate(state.get("operator_plan") or [])]
        return llm + ops

    async def candidate(payload: dict) -> dict:
        view = await make_candidate(ctx, payload)
        # Racing: a valid candidate waits in "drafts" for the race node (race_round.py).
        return {"drafts" if view.get("pending") else "candidates": [view]}

    return {"fan_out": fan_out, "candidate": candidate}


async def make_candidate(ctx: AdapterContext, payload: dict) -> CandidateView:
    """Propose (or reuse the logged proposal), judge (evals/judge.py), log the outcome. With
    policy "racing" a candidate that passed the checks is stored and left for the race node,
    its outcome in the view; otherwise it is evaluated on the selection problems here."""
    cfg, store = ctx.config, ctx.store
    round_, index = payload["round"], payload["index"]
    parent_sha = payload["current_sha"]
    parent_source = await store.aget_version_source(parent_sha)
    rules = {"track": ctx.task.track, "line_limit": cfg.line_limit}
    exposure = await round_exposure(ctx, payload)
    judged = await asyncio.to_thread(judged_versions, store, round_)

    def check(text: str, finish_reason: str | None, edit_format: str) -> Outcome:
        """The judge's checks, then the refusal of a repeat of a judged version (whatever
        proposed it), so a repeat never reaches the Solver."""
        return refuse_repeats(check_candidate(parent_source, text, edit_format, finish_reason,
                                              exposure=exposure, **rules), judged, **rules)

    proposal = await store.aget_proposal(proposal_id(round_, index))
    if proposal is None:
        drafted = await propose(ctx, payload, parent_source, check)
        proposal = new_proposal(round_, index, drafted.messages, drafted.completion,
                                drafted.edit_format, parent_sha=parent_sha,
                                origin=drafted.origin, parent_score=payload["parent_score"])
        await store.aput_proposal(proposal)
        outcome = drafted.outcome
    else:  # resumed: the logged completion is checked again (the check is deterministic)
        outcome = check(proposal.completion, proposal.finish_reason, proposal.edit_format)
    # Every candidate's diff is logged, invalid ones too (`harness-learn show/report` read it).
    await store.aappend_event("candidate_diff", {"proposal_id": proposal.id, "diff": outcome.diff})
    sha = None
    if outcome.needs_evaluation:
        sha = await store.aput_version(outcome.new_source, parent=parent_sha, round_=round_,
                                       note=f"candidate {index}")
        if cfg.policy == "racing" and not training_only(cfg, index):
            # evaluated with the round's others by the race node
            return {**candidate_view(round_, index, proposal.id, sha, outcome, proposal.origin),
                    "pending": True, "outcome": outcome.to_dict()}
        result = await evaluate_cached(ctx, sha, ctx.dev_problems(payload["selection_ids"]),
                                       "selection", round_)
        outcome = await settle_candidate(outcome, result, exposure=exposure,
                                         probe=probe_of(ctx, sha, round_), **rules)
    view = candidate_view(round_, index, proposal.id, sha, outcome, proposal.origin)
    ctx.progress("candidate", {**view, "parent_score": payload["parent_score"],
                               "spent": await store.aspent()})
    await store.asettle_proposal(proposal.id, sha, outcome)
    return view
