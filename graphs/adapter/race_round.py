"""The adapter's `race` node: with policy "racing", the round's valid candidates (the drafts the
candidate nodes left) are evaluated together, stage by stage, by the rule of
`graphs.adapter.racing`; then each is settled like a fully evaluated candidate (reward, proposal
outcome in the log). With any other policy the node passes through.

Re-running the node after a crash redoes no evaluation: every stage goes through
`evaluate_cached`, and the rule is a function of the stored scores.
"""

from __future__ import annotations

from typing import Any

from harness_learning.evals.result import EvalResult
from harness_learning.evals.rewards import proposal_reward
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import evaluate_cached, incomplete_reason
from harness_learning.graphs.adapter.racing import RaceRule, race
from harness_learning.graphs.adapter.state import AdapterState, CandidateView
from harness_learning.harnesses.edits import propose_candidate


def make_race_node(ctx: AdapterContext, rule: RaceRule | None = None):
    rule = rule or ctx.config.race

    async def race_node(state: AdapterState) -> dict:
        if ctx.config.policy != "racing":
            return {}
        round_ = state["round"]
        drafts = sorted((d for d in state.get("drafts") or [] if d["round"] == round_),
                        key=lambda d: d["index"])
        settled = await race_candidates(ctx, drafts, state["selection_ids"], round_, rule,
                                        state.get("current_selection_score"))
        return {"candidates": settled}

    return race_node


async def race_candidates(ctx: AdapterContext, drafts: list[CandidateView],
                          selection_ids: list[str], round_: int,
                          rule: RaceRule, parent_score: float | None = None
                          ) -> list[CandidateView]:
    """Race the drafts on the selection problems (in their sampled order); settle each."""
    problems = ctx.dev_problems(selection_ids)
    by_index = {d["index"]: d for d in drafts}
    results: dict[int, list] = {i: [] for i in by_index}

    async def run(index: int, start: int, end: int) -> list[float]:
        got = await evaluate_cached(ctx, by_index[index]["sha"], problems[start:end],
                                    "selection", round_)
        results[index].extend(got.results)
        return [r.score or 0.0 for r in got.results]

    outcome = await race(list(by_index), len(problems), run, rule)
    await ctx.store.aappend_event("race", {"round": round_, "stages": outcome.stages,
                                           "problems_run": outcome.problems_run,
                                           "winner": outcome.winner})
    settled = []
    for index, draft in by_index.items():
        standing = outcome.standings[index]
        evaluation = EvalResult(results[index])
        view: CandidateView = {**draft, "pending": False, "raced_out": standing.raced_out,
                               "evaluated": len(standing.scores),
                               "completed_fraction": evaluation.completed_fraction}
        view["invalid_reason"] = incomplete_reason(evaluation)
        view["valid"] = view["invalid_reason"] is None
        view["selection_score"] = evaluation.mean_score if view["valid"] else None
        settled.append(await settle(ctx, view, standing.reason, parent_score))
    return settled


async def settle(ctx: AdapterContext, view: CandidateView, race_note: str | None,
                 parent_score: float | None) -> CandidateView:
    """Reward and log a raced candidate the way `make_candidate` does a fully evaluated one."""
    cfg, store = ctx.config, ctx.store
    proposal = await store.aget_proposal(view["round"], view["index"])
    parent_source = await store.aget_version_source(proposal.parent_sha)
    edit = propose_candidate(parent_source, proposal.completion, cfg.edit_format,
                             proposal.finish_reason)
    reward, parts = proposal_reward(
        track=ctx.task.track, parsed=view["parsed"], applied=view["applied"],
        valid=view["valid"], completed_fraction=view["completed_fraction"] or 0.0,
        score=view["selection_score"] or 0.0, source=edit.new_source, line_limit=cfg.line_limit)
    parts = {**parts, "evaluated": view["evaluated"], "raced_out": view["raced_out"],
             "race": race_note}
    view["reward"] = reward
    ctx.progress("candidate", dict(view))
    fields: dict[str, Any] = {
        "candidate_sha": view["sha"], "parsed": view["parsed"], "applied": view["applied"],
        "valid": view["valid"], "invalid_reason": view["invalid_reason"],
        "completed_fraction": view["completed_fraction"],
        "selection_score": view["selection_score"], "parent_score": parent_score,
        "reward": reward, "reward_parts": parts,
        "parsed_edit": edit.edit.to_dict() if edit.edit is not None else None,
    }
    await store.aupdate_proposal_outcome(proposal.id, **fields)
    return view
