"""The worker and its bridge: seeds run, calls are concurrent and traced, failures are classified."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness_learning.harnesses.compiler import HarnessInvalid
from harness_learning.harnesses.llm import InfraError
from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.sandbox.local import LocalBackend
from harness_learning.harnesses.seeds import seed_source

from .conftest import TEST_LIMITS, ScriptedToolbox, node_harness


def test_reasoning_seed_runs_in_a_worker(sandbox):
    toolbox = ScriptedToolbox(lambda args: f"I think. Answer: {len(args['messages'])}")
    outcome = sandbox.run_one(seed_source("reasoning_direct"), toolbox, inputs={"question": "2+2?"})
    prompt = toolbox.seen[0][1]["messages"]
    assert "2+2?" in prompt[-1]["content"]
    assert outcome.error is None and outcome.answer == str(len(prompt))
    assert [c.tool for c in outcome.calls] == ["llm"]
    assert outcome.calls[0].result.endswith(outcome.answer) and outcome.tokens == 7
    assert outcome.calls[0].latency_s > 0


def test_multihop_seed_gets_passages_and_traces_every_call(sandbox):
    replies = iter(["Paris is in France.\nQuery: capital of France", "It is Paris.",
                    "Answer: Paris\nextra"])
    outcome = sandbox.run_one(seed_source("multihop_two_hop"), ScriptedToolbox(lambda a: next(replies)),
                      inputs={"question": "Which city?"})
    assert outcome.answer == "Paris", outcome
    assert [c.tool for c in outcome.calls] == ["search", "llm", "search", "llm", "llm"]
    assert outcome.calls[2].args["query"] == "capital of France"
    assert "[T0] about Which city?" in outcome.calls[1].args["messages"]


def test_baseline_tool_loop_runs_python_through_the_bridge(sandbox):
    from harness_learning.harnesses.toolbox import Toolbox

    class Solver:
        def __init__(self):
            self.turn = 0

        async def acomplete(self, messages, **params):
            self.turn += 1
            if self.turn == 1:
                return "```python\nprint(6 * 7)\n```"
            return f"Answer: {messages[-1]['content'].split()[-1]}"

    outcome = sandbox.run_one(seed_source("baseline_tool_loop"), Toolbox(Solver()))
    assert outcome.answer == "42", outcome
    assert [c.tool for c in outcome.calls] == ["llm", "python", "llm"]
    assert outcome.calls[1].result == {"stdout": "42\n", "error": None}


def test_baseline_tool_loop_keeps_going_after_prose_replies(sandbox):
    """Prose twice (each nudged with a hint that quotes "Answer: ..."), then code, then the
    answer: four Solver turns, not one."""
    replies = ["Let me think about 6 times 7.", "It is a product of two numbers.",
               "```python\nprint(6 * 7)\n```", "Answer: 42"]
    seen: list[list[dict]] = []

    class Solver:
        async def acomplete(self, messages, **params):
            seen.append(messages)
            return replies[len(seen) - 1]

    from harness_learning.harnesses.toolbox import Toolbox

    outcome = sandbox.run_one(seed_source("baseline_tool_loop"), Toolbox(Solver()),
                              inputs={"question": "What is 6 * 7?"})
    assert outcome.error is None and outcome.answer == "42", outcome
    assert [c.tool for c in outcome.calls] == ["llm", "llm", "llm", "python", "llm"]
    assert "Answer: ..." in seen[1][-1]["content"]  # the nudge that used to end the loop
    assert seen[3][-1]["content"] == "Output:\n42\n"


def test_baseline_tool_loop_stops_after_five_turns(sandbox):
    from harness_learning.harnesses.toolbox import Toolbox

    class Solver:
        async def acomplete(self, messages, **params):
            return "I am still thinking."

    outcome = sandbox.run_one(seed_source("baseline_tool_loop"), Toolbox(Solver()))
    assert [c.tool for c in outcome.calls] == ["llm"] * 5
    assert outcome.answer == "I am still thinking."


def test_sixteen_problems_overlap_their_tool_calls(sandbox):
    async def go():
        async with sandbox.worker(ScriptedToolbox(delay_s=0.5)) as worker:
            await worker.load(seed_source("reasoning_direct"))
            t0 = time.perf_counter()
            outs = await asyncio.gather(*(worker.run(f"p{i}", {"question": str(i)})
                                          for i in range(16)))
            return time.perf_counter() - t0, outs

    elapsed, outs = sandbox.run(go())
    assert all(o.answer == "4" for o in outs), outs
    assert elapsed < 4.0, f"16 calls of 0.5 s took {elapsed:.2f} s: the bridge serialises"


FAN_OUT = """
import operator
from typing import Annotated
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

class State(TypedDict, total=False):
    question: str
    parts: Annotated[list, operator.add]
    answer: str

def build_graph(tools):
    def left(state):
        return {"parts": [tools.llm("L " + state["question"])]}
    def right(state):
        return {"parts": [tools.llm("R " + state["question"])]}
    def join(state):
        return {"answer": "|".join(sorted(state["parts"]))}
    g = StateGraph(State)
    for name, fn in (("left", left), ("right", right), ("join", join)):
        g.add_node(name, fn)
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge(["left", "right"], "join")
    g.add_edge("join", END)
    return g
"""


def test_parallel_branches_keep_their_problem_context(sandbox):
    """LangGraph runs the two branches in executor threads: each call must still be
    attributed to its own problem (the context variable crosses into those threads)."""

    async def go():
        async with sandbox.worker(ScriptedToolbox(lambda a: a["messages"], delay_s=0.2)) as worker:
            await worker.load(FAN_OUT)
            return await asyncio.gather(*(worker.run(f"p{i}", {"question": f"q{i}"})
                                          for i in range(4)))

    for i, outcome in enumerate(sandbox.run(go())):
        assert outcome.answer == f"L q{i}|R q{i}", outcome
        assert sorted(c.args["messages"] for c in outcome.calls) == [f"L q{i}", f"R q{i}"]


BEHAVIOURS = node_harness("""
q = state["question"]
if q == "raise":
    answer = {}["missing"]
elif q == "none":
    return {"question": q}
elif q == "spin":
    while True:
        pass
elif q.startswith("catch-base:"):
    try:
        answer = tools.llm(q)
    except BaseException as exc:
        answer = "swallowed " + type(exc).__name__
elif q.startswith("catch:"):
    try:
        answer = tools.llm(q)
    except Exception as exc:
        answer = "swallowed " + type(exc).__name__
else:
    answer = tools.llm(q)
""")
FAILURES = {"infra": InfraError("server", "endpoint down"), "budget": InfraError("budget", "spent"),
            "reset": InfraError("connection", "reset"),
            "tool": ValueError("bad prompt")}


class RoutedToolbox(ScriptedToolbox):
    """Fails with FAILURES[suffix] for prompts "catch...:suffix"."""

    async def call(self, tool, args):
        suffix = str(args.get("messages", "")).rpartition(":")[2]
        self.raises = FAILURES.get(suffix)
        return await super().call(tool, args)


@pytest.fixture(scope="module")
def behaving(sandbox):
    """One worker with a harness whose behaviour the question picks, shared by the
    control-flow tests of this module (each problem is its own run)."""

    async def start():
        worker = await sandbox.pool.acquire(RoutedToolbox())
        await worker.load(BEHAVIOURS)
        return worker

    worker = sandbox.run(start())
    yield lambda question, timeout=None: sandbox.run(worker.run(question, {"question": question},
                                                                timeout))
    sandbox.run(worker.close())


@pytest.mark.parametrize("question, kind", [
    ("catch:infra", "infra"), ("catch:budget", "budget"),
    ("catch-base:reset", "infra"),
])
def test_infra_failures_cannot_be_swallowed(behaving, question, kind):
    outcome = behaving(question)
    assert outcome.error_kind == kind, outcome
    assert outcome.answer is None and str(FAILURES[question.split(":")[1]].args[-1]) in outcome.error
    assert outcome.calls[0].error and outcome.calls[0].meta["kind"] == kind


def test_ordinary_tool_errors_reach_the_harness_as_exceptions(behaving):
    outcome = behaving("catch:tool")
    assert outcome.error_kind is None and outcome.answer == "swallowed ToolError"


def test_harness_exception_is_a_harness_error_with_traceback(behaving):
    outcome = behaving("raise")
    assert outcome.error_kind == "harness" and "KeyError" in outcome.error
    assert "<harness run" in outcome.traceback
    assert 'answer = {}["missing"]' in outcome.traceback  # the source line itself is shown


def test_missing_answer_is_a_harness_error(behaving):
    outcome = behaving("none")
    assert outcome.error_kind == "harness" and "no_answer" in outcome.error


def test_problem_timeout_frees_the_worker_for_the_next_problem(behaving):
    spun = behaving("spin", timeout=1.0)
    time.sleep(0.3)
    t0 = time.perf_counter()
    after = behaving("plain")
    assert spun.error_kind == "timeout" and spun.answer is None
    assert after.answer == "Answer: 4" and time.perf_counter() - t0 < 1.0, after


def test_invalid_sources_are_rejected_with_reasons(sandbox):
    async def go():
        reasons = []
        async with sandbox.worker() as worker:  # a failed load leaves the worker unloaded
            for source in ("def build_graph(tools):\n    return [\n",
                           "def build_graph(tools):\n    raise RuntimeError('nope')\n",
                           "def build_graph(tools):\n    return 42\n"):
                with pytest.raises(HarnessInvalid) as info:
                    await worker.load(source)
                reasons.append(info.value)
        return reasons

    syntax, raised, not_graph = sandbox.run(go())
    assert syntax.kind == "syntax" and syntax.line == 2
    assert raised.kind == "build_raised" and raised.line == 2 and "nope" in raised.traceback
    assert not_graph.kind == "not_a_graph" and "int" in not_graph.detail


class StdioLocal(LocalBackend):
    """The local sandbox speaking the bridge over stdin/stdout, as containers do."""

    stdio_bridge = True


def test_stdio_bridge_keeps_prints_off_the_bridge(sandbox):
    source = node_harness('print("noise " * 5000)\nanswer = tools.llm("x")')

    async def go():
        async with Worker(ScriptedToolbox(), TEST_LIMITS, backend=StdioLocal()) as worker:
            await worker.load(source)
            return await worker.run("p", {"question": "q"}), worker.stderr.text()

    outcome, stderr = sandbox.run(go())
    assert outcome.answer == "Answer: 4", outcome
    assert "noise noise" in stderr


def test_a_problem_that_keeps_calling_the_solver_is_stopped_at_the_call_cap(sandbox):
    """The problem clock stops while tools run, so only the call cap ends this loop: distinct
    prompts (no cache could absorb them), every refusal swallowed by the harness."""
    from dataclasses import replace

    looping = node_harness("""
n = 0
while True:
    try:
        tools.llm(f"question {n}")
    except Exception:
        pass
    n += 1
""")
    toolbox = ScriptedToolbox("Answer: 4", delay_s=0.02)

    async def go():
        limits = replace(TEST_LIMITS, llm_calls_per_problem=10, problem_timeout_s=5.0)
        async with Worker(toolbox, limits) as worker:
            await worker.load(looping)
            t0 = time.perf_counter()
            stopped = await worker.run("p1", {"question": "q"})
            took = time.perf_counter() - t0
            await worker.load(node_harness('answer = tools.llm("after")'))
            return stopped, took, await worker.run("p2", {"question": "q"})

    stopped, took, after = sandbox.run(go())
    assert stopped.error_kind == "harness" and "more than 10 Solver calls" in stopped.error
    assert stopped.answer is None and len(stopped.calls) == 10, stopped
    assert took < 3.0, took  # not the problem's timeout, nor the candidate's
    asked = [args["messages"] for tool, args in toolbox.seen if tool == "llm"]
    assert asked == [f"question {i}" for i in range(10)] + ["after"]  # the 11th never reached it
    assert after.answer == "Answer: 4", after


def test_a_problem_looping_on_searches_is_stopped_at_the_tool_call_cap(sandbox):
    """Searches are quick and their time is off the problem's clock: without the cap this loop
    would hold the candidate until its wall-clock limit."""
    from dataclasses import replace

    looping = node_harness("""
while True:
    try:
        tools.search("where is it?", k=1)
    except Exception:
        pass
""")

    async def go():
        limits = replace(TEST_LIMITS, tool_calls_per_problem=30, problem_timeout_s=5.0)
        async with Worker(ScriptedToolbox(delay_s=0.01), limits) as worker:
            await worker.load(looping)
            return await worker.run("p1", {"question": "q"})

    stopped = sandbox.run(go())
    assert stopped.error_kind == "harness" and "more than 30 tool calls" in stopped.error
    assert len(stopped.calls) == 30 and {c.tool for c in stopped.calls} == {"search"}


@pytest.mark.slow
def test_baseline_tool_loop_with_the_real_local_solver(sandbox, local_model_url):
    """SmolLM2 rarely follows the format: the loop must still run until an answer or 5 turns."""
    from harness_learning.harnesses.llm import ModelClient, ModelConfig
    from harness_learning.harnesses.toolbox import Toolbox

    solver = ModelClient(ModelConfig("local", params={"temperature": 0.0, "max_tokens": 64}))
    outcome = sandbox.run_one(seed_source("baseline_tool_loop"), Toolbox(solver),
                              inputs={"question": "What is 6 * 7?"})
    llm_calls = [c for c in outcome.calls if c.tool == "llm"]
    assert outcome.error is None, outcome
    assert 1 <= len(llm_calls) <= 5
    assert len(llm_calls) == 5 or "Answer:" in llm_calls[-1].result
