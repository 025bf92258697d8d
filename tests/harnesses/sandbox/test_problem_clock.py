"""A problem's clock: its `tools.python` runs count (each run capped by the time it has left),
its waits on the parent's Solver are off the clock only up to `Limits.problem_wait_s`, and an
evaluation ends by `Limits.round_s` (tests/evals/test_evaluator.py). Each limit ends the
problem with the timeout kind.

Bounds on elapsed time are generous multiples of the limits (a loaded 2-core machine must
pass): the failure they catch is a problem held for many times its limit."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from harness_learning.harnesses.contract import ToolInputError
from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.sandbox.client import GRACE_S
from harness_learning.harnesses.sandbox.problem_run import ProblemRun
from harness_learning.harnesses.toolbox import Toolbox

from .conftest import TEST_LIMITS, ScriptedToolbox, node_harness

LIMIT_S = 2.5
SLACK_S = GRACE_S + 10.0
"""Past the limit, what a busy machine may add: the parent's grace and scheduling."""

PYTHON_SLEEPS = node_harness("""
answer = 0
for _ in range(30):
    try:
        tools.python("import time\\ntime.sleep(1)", timeout=30)
    except Exception:
        pass
    answer += 1
""")


def test_repeated_python_sleeps_are_stopped_at_the_problem_limit(sandbox):
    """30 runs of 1 s each, every one well inside its own `timeout`: before, each run stopped
    the problem's clock, and the problem ran for 30 s under a 2.5 s limit."""
    toolbox = Toolbox(python_limits=TEST_LIMITS)

    async def go():
        async with sandbox.worker(toolbox) as worker:
            await worker.load(PYTHON_SLEEPS)
            t0 = time.perf_counter()
            outcome = await worker.run("p1", {"question": "q"}, LIMIT_S)
            return outcome, time.perf_counter() - t0

    outcome, took = sandbox.run(go())
    assert outcome.error_kind == "timeout" and outcome.answer is None, outcome
    assert "wall-clock limit" in outcome.error and "tools.python" in outcome.error, outcome
    assert took < LIMIT_S + SLACK_S, took
    assert 0 < len(outcome.calls) < 30 and {c.tool for c in outcome.calls} == {"python"}


def test_a_python_run_cannot_outlast_its_problem():
    """A run asking for 120 s under a 2.5 s problem is capped by the problem's time left: once
    the problem ends, the candidate's only `tools.python` slot is free for the next problem
    (uncapped, the run held it for the toolbox's 60 s)."""
    limits = replace(TEST_LIMITS, python_concurrency=1)
    toolbox = Toolbox(python_limits=replace(TEST_LIMITS, problem_timeout_s=60.0))
    hold = node_harness('answer = tools.python("import time\\ntime.sleep(60)", timeout=120)')
    quick = node_harness('answer = tools.python("print(6 * 7)").stdout.strip()')

    async def go():
        async with Worker(toolbox, limits) as worker:
            await worker.load(hold)
            held = await worker.run("p1", {"question": "q"}, LIMIT_S)
            await worker.load(quick)
            return held, await worker.run("p2", {"question": "q"}, 20.0)

    held, after = asyncio.run(go())
    assert held.error_kind == "timeout", held
    assert after.answer == "42", after


def test_python_args_are_capped_by_the_time_left():
    run = ProblemRun("p", asyncio.Future(loop=asyncio.new_event_loop()), timeout=5.0)
    assert run.python_args({"code": "1", "timeout": 60}, 10.0)["timeout"] <= 5.0
    assert run.python_args({"code": "1", "timeout": 1}, 10.0)["timeout"] == 1.0
    assert run.python_args({"code": "1"}, 3.0)["timeout"] == 3.0  # the default, within time
    assert run.python_args({"code": "1", "timeout": "soon"}, 30.0)["timeout"] <= 5.0
    run.started -= 6.0  # its time is up: the run is refused, not started
    with pytest.raises(ToolInputError, match="time is up"):
        run.python_args({"code": "1"}, 10.0)


def test_solver_waits_are_off_the_clock_but_bounded(sandbox):
    """One 2.5 s Solver call under a 2 s limit is answered (a slow endpoint is not the
    harness's fault); a loop of them stops once the waits pass `problem_wait_s`."""
    limits = replace(TEST_LIMITS, problem_timeout_s=2.0, problem_wait_factor=2.0)
    toolbox = ScriptedToolbox("Answer: 4", delay_s=2.5)
    loop = node_harness("""
n = 0
while True:
    try:
        tools.llm(f"question {n}")
    except Exception:
        pass
    n += 1
""")

    async def go():
        async with Worker(toolbox, limits) as worker:
            await worker.load(node_harness('answer = tools.llm("one slow call")'))
            one = await worker.run("p1", {"question": "q"})
            await worker.load(loop)
            t0 = time.perf_counter()
            looped = await worker.run("p2", {"question": "q"})
            return one, looped, time.perf_counter() - t0

    one, looped, took = sandbox.run(go())
    assert one.answer == "Answer: 4", one
    assert looped.error_kind == "timeout" and "wall-clock limit" in looped.error, looped
    assert took < limits.problem_timeout_s + limits.problem_wait_s() + SLACK_S, took

