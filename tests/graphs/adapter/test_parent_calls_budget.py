"""The parent's own model calls are held by the run's budgets as a harness's Solver calls are
(graphs/adapter/budget.py, harnesses/llm/ledger.py): a Proposer call reserves its tokens
before it is sent and a refused one is never sent; a judge metric's calls reserve as Solver
calls while the evaluator scores, and a refused one leaves the problem unscored (`budget`);
a user metric's calls through the model layer reach the problem's trace and the ledger.
Control flow with scripted models; the user metric calls the simulated endpoint through the
real model layer. (The whole run with the real local model: test_budget.py.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.evals.custom.metrics import parse_metric
from harness_learning.evals.evaluator import ato_result
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import with_metric_calls
from harness_learning.graphs.adapter.budget import BudgetStop, charge_judged, proposer_share
from harness_learning.graphs.adapter.config import AdaptConfig, Budget
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.harnesses.contract import JUDGE_OP
from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.llm.ledger import Caps, SpendLedger, prompt_bound, used
from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.harnesses.toolbox import Toolbox

MESSAGES = [{"role": "system", "content": "You edit programs."},
            {"role": "user", "content": "Make it add carefully."}]


def test_a_proposer_call_reserves_its_share_and_a_refused_one_is_never_sent(tmp_path: Path):
    proposer = ScriptedModel(lambda text, params: "edit " * 30)
    config = AdaptConfig(task="sums", run_dir=str(tmp_path), rounds=1,
                         budget=Budget(tokens=3000)).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(3), proposer=proposer,
                                     toolbox=Toolbox(solver=ScriptedModel(solver_rule)))
    ctx.store.init_run({"test": "proposer share"})
    seen: dict = {}

    async def go() -> None:
        async with ctx:
            params: dict = {}
            async with proposer_share(ctx, proposer, MESSAGES, params) as use:
                seen["held"] = dict(ctx.ledger.held)
                seen["params"] = dict(params)
                used(use, await proposer.acomplete(MESSAGES, **params))
            seen["settled"] = dict(ctx.ledger.settled)
            with pytest.raises(BudgetStop, match="token budget 3000 reached"):
                async with proposer_share(ctx, proposer, MESSAGES, {"max_tokens": 2900}):
                    await proposer.acomplete(MESSAGES)

    asyncio.run(go())
    bound = prompt_bound(MESSAGES) + 2048
    assert seen["params"] == {"max_tokens": 2048}  # sent explicitly, so the bound holds
    assert seen["held"] == {"solver_calls": 0, "tokens": bound, "cost_usd": 0.0}
    text = "\n".join(m["content"] for m in MESSAGES)
    assert seen["settled"] == {"solver_calls": 0, "tokens": len(text) // 4 + 150 // 4,
                               "cost_usd": 0.0}
    assert len(proposer.calls) == 1, "the refused call was sent"
    with SQLiteLogStore(tmp_path) as log:
        (stop,) = [e.payload for e in log.iter_events(kinds=["budget_stop"])]
    assert stop["reason"] == "token budget 3000 reached" and stop["before"] == "proposer call"


def test_proposer_calls_refused_together_log_the_stop_before_either_stops_the_run(
        tmp_path: Path):
    """The graph cancels its other branches when one raises: the second of two refused calls
    must not raise before the first has written the run's one `budget_stop` (CI once saw none)."""
    proposer = ScriptedModel(lambda text, params: "edit")
    config = AdaptConfig(task="sums", run_dir=str(tmp_path), rounds=1,
                         budget=Budget(tokens=100)).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(3), proposer=proposer,
                                     toolbox=Toolbox(solver=ScriptedModel(solver_rule)))
    ctx.store.init_run({"test": "parallel refusals"})
    slow_append = ctx.store.aappend_event

    async def append_later(kind: str, payload: dict) -> None:
        await asyncio.sleep(0.2)  # the first refusal's write is still in flight ...
        await slow_append(kind, payload)

    ctx.store.aappend_event = append_later

    async def sample() -> None:
        async with proposer_share(ctx, proposer, MESSAGES, {}):
            await proposer.acomplete(MESSAGES)

    async def go() -> None:
        async with ctx:
            with pytest.raises(ExceptionGroup) as raised:  # ... when the second one raises
                async with asyncio.TaskGroup() as group:
                    group.create_task(sample())
                    group.create_task(sample())
            assert all(isinstance(e, BudgetStop) for e in raised.value.exceptions)

    asyncio.run(go())
    assert not proposer.calls
    with SQLiteLogStore(tmp_path) as log:
        (stop,) = [e.payload for e in log.iter_events(kinds=["budget_stop"])]
    assert stop["reason"] == "token budget 100 reached" and stop["before"] == "proposer call"


class JudgedSums:
    """Sums scored by `judge:` a scripted judge that compares (CORRECT only against "7")."""

    def __init__(self) -> None:
        self.metric = parse_metric("judge:scripted")
        self.judge_model = ScriptedModel(
            lambda text, params: "CORRECT" if '<reference>"7"</reference>' in text
            else "INCORRECT")
        self.metric.judge._client = self.judge_model

    async def ascore(self, problem: Problem, answer: str) -> float:
        return await self.metric.ascore(answer, [problem.gold], {"question": problem.question})

    def score(self, problem: Problem, answer: str) -> float:
        raise AssertionError("the evaluator awaits ascore")


def judged(ledger: SpendLedger) -> tuple[ProblemResult, JudgedSums]:
    task = JudgedSums()
    problem = Problem("p", {"question": "What is 3 + 4?"}, "7")
    outcome = ProblemResult("p", answer="7")
    return asyncio.run(ato_result(problem, outcome, task, ledger=ledger)), task


def test_a_judge_metrics_calls_reserve_as_solver_calls_before_they_are_sent():
    ledger = SpendLedger(Caps(solver_calls=5))
    result, task = judged(ledger)
    calls = [c for c in result.calls if c.tool == JUDGE_OP]
    assert result.score == 1.0 and [c.args["against"] for c in calls] == ["reference", "decoy"]
    assert ledger.settled["solver_calls"] == 2 and ledger.held["solver_calls"] == 0
    assert ledger.settled["tokens"] == sum(c.tokens for c in calls) > 0
    charge_judged(SimpleNamespace(ledger=ledger), result)  # settled already: not counted twice
    assert ledger.settled["solver_calls"] == 2 and len(task.judge_model.calls) == 2


def test_a_refused_judge_call_is_never_sent_and_leaves_the_problem_unscored():
    ledger = SpendLedger(Caps(solver_calls=1))
    result, task = judged(ledger)
    assert len(task.judge_model.calls) == 1, "the decoy call was sent past the budget"
    assert result.score is None and result.error_kind == ErrorKind.BUDGET
    assert "solver-call budget 1 reached" in result.error
    assert ledger.settled["solver_calls"] == 1 and ledger.refused


METRIC = '''
from harness_learning.harnesses.llm import get_client


def grade(prediction, gold, example):
    """1 when the prediction is what the endpoint says the gold plus 0 is."""
    reply = get_client("openai/sim@{url}?max_retries=0&transport=direct").complete(
        f"What is {{gold}} + 0?", max_tokens=8)
    return float(prediction.strip() == reply.text.split()[-1])
'''


def test_a_user_metrics_model_calls_reach_the_trace_and_the_ledger(tmp_path: Path):
    """The metric calls the model layer's blocking `complete` (it runs off the event loop)
    and each call comes back as a Solver call of the problem's trace, counted once."""
    with SimServer(latency_s=0.0) as url:
        path = tmp_path / "metric.py"
        path.write_text(METRIC.format(url=url))
        metric = parse_metric(f"{path}:grade")
        graded = asyncio.run(metric.ascore("7", ["7"], {"question": "What is 3 + 4?"}))
    assert graded == 1.0
    (call,) = graded.calls
    assert call.tool == JUDGE_OP and call.args["against"] == "metric" and call.tokens > 0
    assert not call.meta.get("reserved")
    result = with_metric_calls(ProblemResult("p", answer="7", score=1.0), graded)
    ledger = SpendLedger(Caps(solver_calls=10))
    charge_judged(SimpleNamespace(ledger=ledger), result)
    assert ledger.settled["solver_calls"] == 1 and ledger.settled["tokens"] == call.tokens
