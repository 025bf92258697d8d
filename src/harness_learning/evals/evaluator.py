"""Evaluate one harness source on problems, in one sandbox worker.

Only `problem.inputs` cross into the worker; gold answers stay here, where the task scores
the answers. Problems run concurrently up to a bound, and each result is handed to
`on_result` as soon as it is known, so a crash loses only unfinished problems.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness_learning.evals.problem import Problem
from harness_learning.evals.result import EvalResult, Graded, with_metric_calls
from harness_learning.evals.task import Task
from harness_learning.harnesses.compiler import HarnessInvalid, check_source
from harness_learning.harnesses.contract import LINE_LIMIT
from harness_learning.harnesses.llm.errors import InfraError
from harness_learning.harnesses.llm.ledger import SPEND
from harness_learning.harnesses.results import SANDBOX_FAILED, UNSCORED, ErrorKind, ProblemResult
from harness_learning.harnesses.sandbox import Limits, Worker, WorkerPool

if TYPE_CHECKING:
    from harness_learning.harnesses.llm.ledger import SpendLedger
    from harness_learning.harnesses.sandbox.backend import SandboxBackend
    from harness_learning.harnesses.sandbox.records import ToolHandler

ROUND_OVER = ("wall-clock limit: the evaluation ran past its time (Limits.round_s: its problems' "
              "Limits.problem_timeout_s and bounded waits added up) before this problem started")

OnResult = Callable[[ProblemResult], Awaitable[None] | None]


async def evaluate(
    source: str,
    problems: Sequence[Problem],
    task: Task,
    toolbox: ToolHandler,
    *,
    concurrency: int = 8,
    limits: Limits | None = None,
    on_result: OnResult | None = None,
    pool: WorkerPool | None = None,
    line_limit: int = LINE_LIMIT,
    backend: SandboxBackend | None = None,
) -> EvalResult:
    """Run `source` on every problem and score the answers with `task.score`.

    An invalid source gives every problem error_kind "invalid" (with the reason) without
    running any. Infra failures and budget stops are reported unscored (score None). With a
    `pool`, its workers' limits apply; `limits` then sets only the per-problem timeout. No
    evaluation holds its worker past `Limits.round_s` from its first run: what is still
    running or waiting then ends as a timeout."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    limits = limits or Limits()
    try:
        check_source(source, line_limit)
        if not problems:
            return EvalResult([])
    except HarnessInvalid as exc:
        return await _all_failed(problems, exc, on_result)
    worker = await _start_worker(pool, toolbox, limits, backend)
    if isinstance(worker, ProblemResult):  # the sandbox itself could not start
        return await _all_failed(problems, worker, on_result)
    try:
        try:
            await worker.load(source, line_limit)
        except HarnessInvalid as exc:
            return await _all_failed(problems, exc, on_result)
        except OSError as exc:  # the worker vanished before the source arrived
            failed = ProblemResult(error=f"{SANDBOX_FAILED[1]}: {exc}", error_kind=ErrorKind.INFRA)
            return await _all_failed(problems, failed, on_result)
        return await _run_all(worker, problems, task, toolbox, concurrency,
                              limits.problem_timeout_s, on_result)
    finally:
        await worker.close()


async def _start_worker(pool: WorkerPool | None, toolbox: ToolHandler, limits: Limits,
                        backend: SandboxBackend | None) -> Worker | ProblemResult:
    """A worker from `pool`, or a new one; if the sandbox cannot start, the failure every
    problem then gets (an infra error: nobody's answer is wrong)."""
    try:
        if pool is not None:
            return await pool.acquire(toolbox)
        worker = Worker(toolbox, limits, backend)
        await worker.start()
        return worker
    except Exception as exc:
        return ProblemResult(error=f"{SANDBOX_FAILED[0]}: {exc}", error_kind=ErrorKind.INFRA)


async def _run_all(worker: Worker, problems: Sequence[Problem], task: Task,
                   toolbox: ToolHandler, concurrency: int, timeout: float,
                   on_result: OnResult | None) -> EvalResult:
    """Every problem on the loaded `worker`, `concurrency` at once, until the round's
    deadline: what has not started by then ends as a timeout."""
    gate = asyncio.Semaphore(concurrency)
    deadline = time.perf_counter() + worker.limits.round_s(len(problems), timeout)

    async def one(problem: Problem) -> ProblemResult:
        async with gate:
            if time.perf_counter() < deadline:
                outcome = await worker.run(problem.id, dict(problem.inputs), timeout,
                                           deadline=deadline)
            else:
                outcome = ProblemResult(problem.id, error=ROUND_OVER, error_kind=ErrorKind.TIMEOUT)
        result = await ato_result(problem, outcome, task, ledger=getattr(toolbox, "ledger", None))
        await _emit(on_result, result)
        return result

    return EvalResult(list(await asyncio.gather(*(one(p) for p in problems))))


def evaluate_sync(source: str, problems: Sequence[Problem], task: Task, toolbox: ToolHandler,
                  **kwargs: Any) -> EvalResult:
    """`evaluate` for scripts without an event loop."""
    return asyncio.run(evaluate(source, problems, task, toolbox, **kwargs))


def to_result(problem: Problem, outcome: ProblemResult, task: Task) -> ProblemResult:
    """Score a run: answers are scored, harness faults and timeouts score 0, infra and
    budget stops stay unscored (None). A metric that fails on an answer scores it 0 as
    `metric_error`, the answer kept: counted and shown, never the run's end. The sandbox's
    record comes back with its score."""
    score: float | None
    error = outcome.error
    if outcome.error_kind in UNSCORED:
        score = None
    elif outcome.error_kind is not None or outcome.answer is None:
        score = 0.0
    else:
        score, scorer_error, feedback = graded_score(task, problem, outcome.answer)
        kind = ErrorKind.METRIC if scorer_error is not None else None
        return dataclasses.replace(outcome, problem_id=problem.id, score=score,
                                   error=error or scorer_error, error_kind=kind,
                                   feedback=feedback)
    return dataclasses.replace(outcome, problem_id=problem.id, score=score, error=error)


async def ato_result(problem: Problem, outcome: ProblemResult, task: Task,
                     ledger: SpendLedger | None = None) -> ProblemResult:
    """`to_result`, awaiting a task's `ascore` (an LLM judge) where it has one, so a scorer
    that calls a model does not block the event loop the problems run on. `ledger`: the run's
    budgets, on which a judge's calls reserve their share (`ledger.SPEND`); a refused one
    leaves the problem unscored as `budget`, as a refused Solver call does."""
    ascore = getattr(task, "ascore", None)
    if ascore is None or outcome.error_kind is not None or outcome.answer is None:
        return to_result(problem, outcome, task)
    token = SPEND.set(ledger)
    try:
        value = await ascore(problem, outcome.answer)
    except Exception as exc:
        value = exc
    finally:
        SPEND.reset(token)
    refusal = budget_refusal(value)
    if refusal is not None:
        return dataclasses.replace(outcome, problem_id=problem.id, score=None,
                                   error=f"the metric's model call was refused: {refusal}",
                                   error_kind=ErrorKind.BUDGET)
    return with_metric_calls(to_result(problem, outcome, _Scored(value)), value)


def budget_refusal(value: object) -> InfraError | None:
    """The budget's refusal behind `value` (an exception, perhaps a metric's wrapping one)."""
    seen = 0
    while isinstance(value, BaseException) and seen < 8:
        if isinstance(value, InfraError) and value.kind == ErrorKind.BUDGET:
            return value
        value, seen = value.__cause__ or value.__context__, seen + 1
    return None


class _Scored:
    """A task whose `score` replays one known value (or exception) through `guarded_score`."""

    def __init__(self, value: float | Exception) -> None:
        self.value = value

    def score(self, problem: Problem, answer: str) -> float:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


def guarded_score(task: Task, problem: Problem, answer: str) -> tuple[float, str | None]:
    """`task.score`, clamped to 0..1; a scorer that raises gives 0 and says why."""
    value, error, _ = graded_score(task, problem, answer)
    return value, error


def graded_score(task: Task, problem: Problem, answer: str
                 ) -> tuple[float, str | None, str | None]:
    """`guarded_score` plus the metric's feedback text, when it returned a `Graded` score."""
    try:
        raw = task.score(problem, answer)
        value = float(raw)
    except Exception as exc:  # a task's MetricError already says which metric did what
        said = type(exc).__name__ == "MetricError"
        return 0.0, str(exc) if said else f"the scorer raised {type(exc).__name__}: {exc}", None
    if math.isnan(value):
        return 0.0, "the scorer returned NaN", None
    feedback = raw.feedback if isinstance(raw, Graded) else None
    return min(1.0, max(0.0, value)), None, feedback


async def _all_failed(problems: Sequence[Problem], why: HarnessInvalid | ProblemResult,
                      on_result: OnResult | None) -> EvalResult:
    results = []
    for problem in problems:
        if isinstance(why, HarnessInvalid):
            result = ProblemResult.refused(why, problem.id)
        else:
            result = dataclasses.replace(why, problem_id=problem.id)
        await _emit(on_result, result)
        results.append(result)
    return EvalResult(results)


async def _emit(on_result: OnResult | None, result: ProblemResult) -> None:
    if on_result is not None:
        maybe = on_result(result)
        if inspect.isawaitable(maybe):
            await maybe
