"""Only the parent's own failures leave a problem unscored, and the stored trace is bounded in
bytes.

A harness's Solver parameters are its own: an empty reply they provoke from the real local
model is an answer (scored), not an infrastructure failure (unscored, retried). A harness that
floods its trace with strings just under the per-string cap leaves a bounded record, and the
parent's memory grows by a bounded amount while the calls arrive."""

from __future__ import annotations

import asyncio
import gc
import json
from dataclasses import replace

import psutil
import pytest
from scripted_sums import ScriptedModel, SumTask

from harness_learning.evals.evaluator import evaluate
from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.llm import ModelClient
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.sandbox import Limits
from harness_learning.harnesses.sandbox.trace import bounded_call, stored_bytes
from harness_learning.harnesses.toolbox import Toolbox

from .conftest import TEST_LIMITS, node_harness

pytestmark = pytest.mark.reliability

STOP_AT_ONCE = node_harness("""
first = tools.llm(state["question"], max_tokens=1)
answer = tools.llm(state["question"], stop=[first[:1] or "\\n", "\\n", " "], max_tokens=8)
""")
"""The Solver's greedy reply's first character, then the same question with it as a stop
sequence (a list of at most 4, as the toolbox allows): the reply ends before it starts."""

HOT = node_harness("""
answer = tools.llm(state["question"], temperature="hot", max_tokens=8)
""")
"""A value the endpoint would refuse (llama-cpp-python answers it with a 500 that litellm
would report as a server fault): a harness sending it on the problems it expects to fail
would choose which of them go unscored."""


@pytest.mark.slow
def test_an_empty_reply_the_harness_provoked_scores_zero_with_the_real_solver(local_model_url):
    solver = ModelClient("local?max_retries=1")
    toolbox = Toolbox(solver=solver, solver_params={"temperature": 0.0, "max_tokens": 24})
    task = SumTask(2)
    result = asyncio.run(evaluate(STOP_AT_ONCE, task.dev(), task, toolbox, limits=TEST_LIMITS))
    assert [(r.error_kind, r.score) for r in result.results] == [(None, 0.0), (None, 0.0)], \
        [r.error for r in result.results]
    llm = [c for r in result.results for c in r.calls if c.tool == "llm"][1::2]
    assert len(llm) == 2 and all(c.error is None and c.result == "" for c in llm), llm


@pytest.mark.slow
def test_a_solver_value_the_endpoint_would_refuse_is_the_harnesss_fault(local_model_url):
    solver = ModelClient("local?max_retries=1")
    toolbox = Toolbox(solver=solver, solver_params={"temperature": 0.0, "max_tokens": 24})
    task = SumTask(2)
    result = asyncio.run(evaluate(HOT, task.dev(), task, toolbox, limits=TEST_LIMITS))
    assert [(r.error_kind, r.score) for r in result.results] == [("harness", 0.0)] * 2
    assert result.mean_score == 0.0 and not any(r.unscored for r in result.results)
    llm = [c for r in result.results for c in r.calls if c.tool == "llm"]
    assert len(llm) == 2 and all(c.meta.get("kind") == "tool" and
                                 "temperature takes a number from 0 to 2" in c.error for c in llm)
    assert solver.stats.requests == 0, "refused in the parent, before the endpoint"


FLOOD = node_harness("""
chunk = "f" * (16 * 1024 - 8)
for i in range(200):
    try:
        tools.llm([{"role": "user", "content": chunk}] * 24, bogus=i)
    except Exception:
        pass
answer = "flooded"
""")
"""200 failed Solver calls, each with 24 strings just under the trace's per-string cap
(about 390 KB of arguments, under `Limits.tool_arg_bytes`): 78 MB of trace without bounds."""


def _flood(limits: Limits, runs: int) -> tuple[list[ProblemResult], int]:
    """(the results of `runs` flooding problems in one candidate, the parent's RSS growth)."""

    async def go() -> tuple[list[ProblemResult], int]:
        from harness_learning.harnesses.sandbox import Worker

        gc.collect()
        before = psutil.Process().memory_info().rss
        toolbox = Toolbox(solver=ScriptedModel(lambda text, params: "never asked"))
        async with Worker(toolbox, limits) as worker:
            await worker.load(FLOOD)
            results = [await worker.run(f"p{i}", {"question": "q"}) for i in range(runs)]
        gc.collect()
        return results, psutil.Process().memory_info().rss - before

    return asyncio.run(go())


def test_a_flooded_trace_is_bounded_per_problem_and_the_parent_stays_small(tmp_path):
    from harness_learning.harnesses.store import SQLiteLogStore

    limits = Limits(memory_mb=1536, pids=32, cpu_s=120, problem_timeout_s=60.0,
                    tool_calls_per_problem=256, llm_calls_per_problem=256)
    results, growth = _flood(limits, runs=2)
    store = SQLiteLogStore(tmp_path)
    store.init_run({"test": "trace flood"})
    sha = store.put_version(FLOOD, parent=None, round_=0)
    store.put_results(sha, "selection", 1, results)
    kept = store.get_results(sha, ["p0", "p1"], "selection")
    store.close()
    log_bytes = sum(f.stat().st_size for f in tmp_path.glob("log.sqlite*"))
    assert 0 < log_bytes < 2 * limits.trace_problem_bytes + (1 << 20), log_bytes
    assert [kept[r.problem_id].trace_bytes_cut for r in results] == [
        r.trace_bytes_cut for r in results]
    for result in results:
        assert result.answer == "flooded" and len(result.calls) == 200, result.error
        stored = len(json.dumps(result.to_dict()).encode())
        assert stored < limits.trace_problem_bytes + 200 * 1024, stored
        assert result.trace_bytes_cut > 60 * 1024 * 1024, result.trace_bytes_cut
        assert all("bogus" in (c.error or "") and c.meta.get("kind") == "tool" and c.tool == "llm"
                   for c in result.calls)  # every call is still there, with why it failed
    assert growth < 64 * 1024 * 1024, growth


def test_a_candidates_traces_are_bounded_together():
    limits = Limits(memory_mb=1536, pids=32, cpu_s=120, problem_timeout_s=60.0,
                    tool_calls_per_problem=256, llm_calls_per_problem=256,
                    trace_problem_bytes=2 << 20, trace_candidate_bytes=3 << 20)
    first, second = _flood(limits, runs=2)[0]
    assert sum(stored_bytes(c) for c in first.calls) <= (2 << 20) + 200 * 1024
    assert sum(stored_bytes(c) for c in second.calls) <= (1 << 20) + 200 * 1024
    marks = [c.meta["trace_cut"]["limit"] for c in second.calls if "trace_cut" in c.meta]
    assert "Limits.trace_candidate_bytes" in marks


def test_a_cut_call_keeps_its_failure_and_says_what_it_lost():
    call = ToolCall("llm", {"messages": ["m" * 9000] * 20}, None, "ToolError: " + "e" * 9000,
                    0.5, 3, meta={"kind": "infra"})
    size = stored_bytes(call)
    cut, cut_size = bounded_call(call, call_bytes=16 * 1024, left=1 << 20)
    assert cut_size == stored_bytes(cut) < 16 * 1024 + 4096
    assert cut.meta["kind"] == "infra" and cut.error.startswith("ToolError") and cut.tokens == 3
    assert cut.meta["trace_cut"]["of"] == size
    assert cut.meta["trace_cut"]["bytes"] == size - stored_bytes(replace(cut, meta={"kind": "infra"}))
    stub, stub_size = bounded_call(call, call_bytes=16 * 1024, left=0)
    assert stub.args == {} and stub_size < 600 and stub.meta["kind"] == "infra"
    assert stub.meta["trace_cut"]["limit"] == "Limits.trace_problem_bytes"
    result = ProblemResult("p", calls=(cut, stub))
    again = ProblemResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.trace_bytes_cut == result.trace_bytes_cut > 0


def test_a_cut_is_counted_in_bytes_whatever_the_characters():
    call = ToolCall("search", {"query": ["\U0001f600" * 3000] * 10}, None, "no retriever")
    cut, size = bounded_call(call, call_bytes=8 * 1024, left=1 << 20)
    assert size == stored_bytes(cut) <= 8 * 1024
    assert cut.meta["trace_cut"]["bytes"] > 100_000
