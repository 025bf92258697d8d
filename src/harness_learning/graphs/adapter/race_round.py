"""The adapter's `race` node: with policy "racing", the round's valid candidates (the drafts the
candidate nodes left) are evaluated together, stage by stage, by the rule of
`graphs.adapter.racing`; then the judge settles each draft's outcome with the problems it ran, as
it does a fully evaluated candidate (reward, proposal outcome in the log); the completion is not
read or parsed again. With any other policy the node passes through.

Re-running the node after a crash redoes no evaluation: every stage goes through
`evaluate_cached`, and the rule is a function of the stored scores.
"""

from __future__ import annotations

from dataclasses import replace

from harness_learning.evals.judge import Outcome, settle_candidate
from harness_learning.evals.memorisation import Exposure
from harness_learning.evals.result import EvalResult
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import (
    candidate_view,
    evaluate_cached,
    probe_of,
    round_exposure,
)
from harness_learning.graphs.adapter.racing import RaceRule, race
from harness_learning.graphs.adapter.state import AdapterState, CandidateView


def make_race_node(ctx: AdapterContext, rule: RaceRule | None = None):
    rule = rule or ctx.config.race

    async def race_node(state: AdapterState) -> dict:
        if ctx.config.policy != "racing":
            return {}
        round_ = state["round"]
        drafts = sorted((d for d in state.get("drafts") or [] if d["round"] == round_),
                        key=lambda d: d["index"])
        settled = await race_candidates(ctx, drafts, state["selection_ids"], round_, rule,
                                        state.get("current_selection_score"),
                                        exposure=await round_exposure(ctx, state))
        return {"candidates": settled}

    return race_node


async def race_candidates(ctx: AdapterContext, drafts: list[CandidateView],
                          selection_ids: list[str], round_: int,
                          rule: RaceRule, parent_score: float | None = None, *,
                          exposure: Exposure) -> list[CandidateView]:
    """Race the drafts on the selection problems (in their sampled order); settle each with
    the judge, which puts every valid one, raced out or not, to the memorisation check against
    what the round's report showed (`exposure`), as `make_candidate` does."""
    problems = ctx.dev_problems(selection_ids)
    by_index = {d["index"]: d for d in drafts}
    results: dict[int, list] = {i: [] for i in by_index}

    async def run(index: int, start: int, end: int) -> list[float]:
        got = await evaluate_cached(ctx, by_index[index]["sha"], problems[start:end],
                                    "selection", round_)
        results[index].extend(got.results)
        return [r.score or 0.0 for r in got.results]

    raced = await race(list(by_index), len(problems), run, rule)
    await ctx.store.aappend_event("race", {"round": round_, "stages": raced.stages,
                                           "problems_run": raced.problems_run,
                                           "winner": raced.winner})
    settled = []
    rules = {"track": ctx.task.track, "line_limit": ctx.config.line_limit}
    for index, draft in by_index.items():
        standing = raced.standings[index]
        evaluation = EvalResult(results[index])
        judged = await settle_candidate(Outcome.from_dict(draft["outcome"]), evaluation,
                                        exposure=exposure,
                                        probe=probe_of(ctx, draft["sha"], round_), **rules)
        view: CandidateView = {
            **candidate_view(draft["round"], index, draft["proposal_id"], draft["sha"], judged,
                             draft.get("origin", "proposer")),
            "pending": False, "raced_out": standing.raced_out,
            "evaluated": len(standing.scores)}
        ctx.progress("candidate", {**view, "parent_score": parent_score,
                                   "spent": await ctx.store.aspent()})
        notes = {"evaluated": view["evaluated"], "raced_out": view["raced_out"],
                 "race": standing.reason}  # the race's, kept with the reward's parts
        await ctx.store.asettle_proposal(draft["proposal_id"], draft["sha"], replace(
            judged, reward_parts={**judged.reward_parts, **notes}))
        settled.append(view)
    return settled
