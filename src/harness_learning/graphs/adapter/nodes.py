"""The adapter graph's nodes. Each node is idempotent against the execution log: a node re-run
after a crash finds finished evaluations and proposals in the store and redoes none of them."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

from langgraph.types import interrupt

from harness_learning.evals.evaluator import evaluate
from harness_learning.evals.judge import Outcome
from harness_learning.evals.memorisation import PROBE, Exposure, Probe
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import EvalResult
from harness_learning.evals.splits import held_out_round, sample_round
from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.budget import (
    budget_cut,
    budget_reason,
    charge_judged,
    check_budget,
    cut_short,
    spending,
)
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.execution_report import build_report
from harness_learning.graphs.adapter.experience_search import operator_plan
from harness_learning.graphs.adapter.few_shot import (
    demonstrable,
    demonstrations,
    held_out_in_force,
)
from harness_learning.graphs.adapter.inputs import start_source
from harness_learning.graphs.adapter.parents import parent_draw, selection_archive
from harness_learning.graphs.adapter.policies import Scored, decide
from harness_learning.graphs.adapter.result_writer import ResultWriter
from harness_learning.graphs.adapter.slots import PROPOSER, plan_slots, round_slots
from harness_learning.graphs.adapter.state import AdapterState, CandidateView, RoundView
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.sandbox import sandbox_choice, sandbox_fallbacks
from harness_learning.harnesses.store.spend import is_solver_call


class InfraStop(RuntimeError):
    """Problems kept failing for infrastructure reasons: the run stops so that no infra error is
    scored as a wrong answer; `harness-learn resume` continues once the endpoint is back."""


async def evaluate_cached(ctx: AdapterContext, sha: str, problems: list[Problem], purpose: str,
                          round_: int, attempts: int = 2, budgeted: bool = True) -> EvalResult:
    """Evaluate version `sha` on `problems`, reusing every result already in the log.

    Results with infrastructure errors are never stored: they are retried, and if they still
    fail the run stops with `InfraStop` (a resumed run retries them again). An evaluation with
    anything left to run first checks the run's budgets (`budget.check_budget`, unless not
    `budgeted`: the held-out test after the run) and raises `BudgetStop` past one; a budget
    that refuses a Solver call while it runs cuts it short (`budget.budget_cut`): the run
    stops and the evaluation is never judged. An evaluation of the same version, purpose and
    round already running is waited for, and its results reused
    (`AdapterContext.evaluation_lock`)."""
    async with ctx.evaluation_lock(sha, purpose, round_):
        with spending(ctx, budgeted):
            return await _evaluate_missing(ctx, sha, problems, purpose, round_, attempts,
                                           budgeted)


async def _evaluate_missing(ctx: AdapterContext, sha: str, problems: list[Problem], purpose: str,
                            round_: int, attempts: int, budgeted: bool) -> EvalResult:
    store = ctx.store
    ids = [p.id for p in problems]
    infra: list[str] = []
    refused: list[str] = []
    what = f"{purpose} evaluation of {sha[:12]} (round {round_})"

    writer = ResultWriter(store, sha, purpose, round_)

    async def keep(result: ProblemResult) -> None:
        if cut_short(result):
            refused.append(result.problem_id)
            infra.append(f"{result.problem_id}: {result.error or 'a Solver call was refused'}")
            return
        charge_judged(ctx, result)
        if result.unscored:
            infra.append(f"{result.problem_id}: {result.error}")
            return
        writer.add(result)
        ctx.progress("problem", {"sha": sha, "purpose": purpose, "score": result.score,
                                 "tokens": result.tokens, "calls": len(result.calls),
                                 "solver_calls": sum(map(is_solver_call, result.calls))})

    done = await store.aget_results(sha, ids, purpose)
    if budgeted and len(done) < len(set(ids)):
        await check_budget(ctx, what)
    for _ in range(attempts):
        todo = [p for p in problems if p.id not in done]
        if not todo:
            break
        source = await store.aget_version_source(sha)
        try:
            await evaluate(source, todo, ctx.task, ctx.toolbox, concurrency=ctx.config.concurrency,
                           limits=ctx.limits, on_result=keep, pool=ctx.pool,
                           line_limit=ctx.config.line_limit)
        finally:
            await writer.flush()  # what finished is kept, even if the evaluation failed
        ledger = getattr(ctx, "ledger", None)
        if refused or (budgeted and ledger is not None and ledger.refused):
            await budget_cut(ctx, what, refused)
        done = await store.aget_results(sha, ids, purpose)
    missing = [i for i in ids if i not in done]
    if missing:
        await store.aappend_event("infra_stop", {"sha": sha, "purpose": purpose,
                                                 "missing": missing, "errors": infra[-5:]})
        raise InfraStop(f"{len(missing)} problem(s) failed for infrastructure reasons "
                        f"{attempts} times (last: {infra[-1] if infra else '?'}); nothing "
                        "finished is lost: fix the endpoint and run `harness-learn resume`")
    return EvalResult([done[i] for i in ids])


def make_nodes(ctx: AdapterContext) -> dict[str, Any]:
    cfg = ctx.config

    async def init(state: AdapterState) -> dict:
        if state.get("current_sha"):
            return {}
        source = await asyncio.to_thread(start_source, cfg, ctx.task)  # reads the stored copy
        await asyncio.to_thread(ctx.store.init_run, json.loads(cfg.to_json()))
        sha = await ctx.store.aput_version(source, parent=None, round_=0, note="seed")
        await ctx.store.aappend_event("run_started", {"config": cfg.to_json(), "seed_sha": sha})
        choice = await asyncio.to_thread(sandbox_choice, ctx.pool.backend)  # probes: a thread
        await ctx.store.aappend_event("sandbox", {"chosen": choice})
        fallbacks = await asyncio.to_thread(sandbox_fallbacks, ctx.pool.backend)
        if fallbacks:  # once per run: what the sandbox could not set up here, and what holds
            await ctx.store.aappend_event("sandbox_fallback", fallbacks)
        return {"task": cfg.task, "run_dir": str(cfg.path), "round": 1, "current_sha": sha,
                "best_score": None, "rounds_without_gain": 0,
                "spent": {"solver_calls": 0, "tokens": 0},
                "human_feedback": list(state.get("human_feedback") or [])}

    async def sample(state: AdapterState) -> dict:
        feedback, selection = await asyncio.to_thread(  # a task may generate its problems
            draw_round, ctx.task, state["round"], cfg)
        return {"feedback_ids": [p.id for p in feedback], "selection_ids": [p.id for p in selection]}

    async def evaluate_current(state: AdapterState) -> dict:
        sha, round_ = state["current_sha"], state["round"]
        fb = await evaluate_cached(ctx, sha, ctx.dev_problems(state["feedback_ids"]), "feedback", round_)
        sel = await evaluate_cached(ctx, sha, ctx.dev_problems(state["selection_ids"]), "selection",
                                    round_)
        problems = [ctx.problems[r.problem_id] for r in fb.results]
        report = build_report(ctx.task, problems, fb, budget_chars=cfg.report_chars,
                              human_feedback=state.get("human_feedback") or [])
        plan = await operator_plan(ctx, sha, round_, demonstrations(
            ctx, state["feedback_ids"], state["selection_ids"]), state["feedback_ids"])
        return {"feedback_score": fb.mean_score, "current_selection_score": sel.mean_score,
                "report": report, "operator_plan": plan,  # the round's slots, planned once
                "slots": [slot.to_dict() for slot in plan_slots(cfg, plan)]}

    async def select(state: AdapterState) -> dict:
        return await choose(ctx, state)

    return {"init": init, "sample": sample, "evaluate_current": evaluate_current,
            "select": select}


def draw_round(task: Task, round_: int, cfg: AdaptConfig) -> tuple[list[Problem], list[Problem]]:
    """The round's feedback and selection problems (evals/splits.py). Held out, selection never
    holds a problem any report of the run shows. The paper's way, the reasoning track draws
    both from one 25-problem pool, and QA draws disjoint ones afresh each round; so does a
    held-out run whose dev pool cannot hold both sizes, with a warning that says so."""
    dev = task.dev()
    if held_out_in_force(cfg, len(dev)):
        return held_out_round(dev, round_, cfg.seed, cfg.feedback, cfg.selection,
                              described=dev[0])  # every task's description quotes dev()[0]
    if cfg.split == "held_out":
        warnings.warn(f"the dev pool holds {len(dev)} problems, fewer than feedback "
                      f"{cfg.feedback} + selection {cfg.selection}: the paper's draws are used, "
                      "under which a copied gold can pay; raise --dev or lower the sizes",
                      stacklevel=2)
    return sample_round(dev, round_, cfg.seed, cfg.feedback, cfg.selection,
                        disjoint=task.track == "qa")


async def round_exposure(ctx: AdapterContext, shown: dict) -> Exposure:
    """What the round's report showed the Proposer (`shown` holds its `report` and
    `feedback_ids`), for the judge's reward-hacking guards, with the parent's logged scores on
    the round's problems (`current_sha`), which the behaviour check compares problem by
    problem."""
    parent: dict[str, float | None] = {}
    if shown.get("current_sha"):
        for purpose in ("feedback", "selection"):
            ids = shown.get(f"{purpose}_ids") or []
            done = await ctx.store.aget_results(shown["current_sha"], ids, purpose)
            parent.update({pid: r.score for pid, r in done.items()})
    probe = probe_of(ctx, shown["current_sha"], shown.get("round") or 0) \
        if shown.get("current_sha") else None
    return Exposure.of(ctx.dev_problems(shown.get("feedback_ids") or []),
                       shown.get("report") or "", ctx.task, parent, probe,
                       demonstrable(ctx, shown.get("selection_ids") or []))


def probe_of(ctx: AdapterContext, sha: str, round_: int) -> Probe:
    """The judge's memorisation probe for candidate `sha`: evaluations reused from and logged to
    the store under purpose "probe"."""
    async def probe(problems: list[Problem]) -> EvalResult:
        return await evaluate_cached(ctx, sha, problems, PROBE, round_)
    return probe


def candidate_view(round_: int, index: int, proposal_id: str, sha: str | None,
                   outcome: Outcome, origin: str = PROPOSER) -> CandidateView:
    """What the graph state (and Studio) shows of a judged candidate: which one it is, and the
    judge's `outcome.view()`. A racing draft also carries its `outcome` record, which the race
    node settles without re-reading the proposal (settled views leave it out: the log holds
    it, and the state stays small)."""
    return {"round": round_, "index": index, "proposal_id": proposal_id, "sha": sha,
            "origin": origin, **outcome.view()}


def round_candidates(cfg: AdaptConfig, state: AdapterState) -> list[CandidateView]:
    """This round's candidates the policy sees, by index: every slot's but the training-only
    samples' (`slots.Slot.training_only`)."""
    round_ = state["round"]
    training = {s.index for s in round_slots(cfg, state) if s.training_only}
    return sorted((c for c in state.get("candidates", [])
                   if c["round"] == round_ and c["index"] not in training),
                  key=lambda c: c["index"])


async def choose(ctx: AdapterContext, state: AdapterState) -> dict:
    """Apply the policy to this round's candidates (the merge's among them, left in the state by
    the `merge` node), ask a person if the gate is on, record."""
    cfg, round_ = ctx.config, state["round"]
    mine = round_candidates(cfg, state)
    current = Scored(state["current_sha"], True, state.get("current_selection_score"), -1)
    scored = [Scored(c["sha"] or "", c["valid"], c["selection_score"], c["index"],
                     raced_out=bool(c.get("raced_out"))) for c in mine]
    archive = None
    if cfg.policy == "pareto":
        archive = await asyncio.to_thread(selection_archive, ctx.store, state["selection_ids"],
                                          current.sha)
    decision = decide(cfg.policy, current, scored, archive, parent_draw(cfg.seed, round_))
    human = list(state.get("human_feedback") or [])
    approved = None
    pick = next((c for c in mine if c["sha"] == decision.chosen_sha), None)
    if decision.adopted and cfg.approval and pick is not None:
        answer = interrupt({"round": round_, "candidate": pick["index"], "diff": pick["diff"],
                            "selection_score": pick["selection_score"],
                            "current_score": current.score, "question": "approve or reject?"})
        approved = bool(answer.get("approve")) if isinstance(answer, dict) else bool(answer)
        if not approved:
            reason = answer.get("reason", "") if isinstance(answer, dict) else ""
            human.append(f"Round {round_}: a reviewer rejected candidate {pick['index']}: {reason}")
            decision = type(decision)(current.sha, False, f"rejected by reviewer: {reason}")
    chosen_score = decision.score if decision.score is not None else next(
        (c["selection_score"] for c in mine if c["sha"] == decision.chosen_sha), current.score)
    best = state.get("best_score")
    gained = chosen_score is not None and (best is None or chosen_score > best)
    await ctx.store.aput_decision(round_=round_, current_sha=current.sha,
                                  chosen_sha=decision.chosen_sha, policy=cfg.policy,
                                  reason=decision.reason,
                                  scores={"current": current.score, "chosen": chosen_score,
                                          "candidates": {c["index"]: c["selection_score"]
                                                         for c in mine},
                                          "rejected": pick["index"] if approved is False and pick else None})
    view: RoundView = {"round": round_, "current_sha": current.sha,
                       "feedback_score": state.get("feedback_score", 0.0),
                       "current_selection_score": current.score, "candidates": mine,
                       "decision": decision.reason, "chosen_sha": decision.chosen_sha,
                       "adopted": decision.adopted, "approved": approved}
    spent = await ctx.store.aspent()
    return {"rounds": [view], "current_sha": decision.chosen_sha, "round": round_ + 1,
            "best_score": chosen_score if gained else best,
            "rounds_without_gain": 0 if gained else state.get("rounds_without_gain", 0) + 1,
            "human_feedback": human, "spent": spent}


PERFECT = 1.0 - 1e-9
"""A selection score at the metric's maximum (scores are in [0, 1]), allowing for rounding."""


def stop_reason(cfg, state: AdapterState) -> str | None:
    """Why the run should stop after this round, or None to go on."""
    if state["round"] > cfg.rounds:
        return f"finished {cfg.rounds} rounds"
    if cfg.patience is not None and state.get("rounds_without_gain", 0) >= cfg.patience:
        return f"no gain for {cfg.patience} rounds"
    best = state.get("best_score")
    if cfg.stop_when_perfect and cfg.policy == "strict" and best is not None and best >= PERFECT:
        return f"selection score {best:.3f} is the metric's maximum"
    return budget_reason(cfg.budget, state.get("spent") or {})
