"""`load_harness`: a harness as a compiled graph for users' apps: sandboxed by default, usable
as a Runnable, a subgraph and a tool; in process only for reviewed code."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.serving.embed import HarnessRunError, load_harness, resolve_harness
from harness_learning.harnesses.compiler import HarnessInvalid
from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import SQLiteLogStore

pytestmark = pytest.mark.timeout(120)

PID_HARNESS = '''
import os
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    def solve(state: State) -> dict:
        reply = tools.llm(state["question"])
        return {"answer": f"{reply.removeprefix('Answer: ')} pid={os.getpid()}"}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
'''


@pytest.fixture(scope="module")
def sim():
    with SimServer(latency_s=0.01) as url:
        yield f"openai/sim@{url}"


@pytest.fixture(scope="module")
def seed(sim):
    graph = load_harness("reasoning_direct", model=sim)
    yield graph
    graph.harness_runner.close()


def test_seed_in_sandbox_sync_async_batch(seed) -> None:
    out = seed.invoke({"question": "What is 6 * 7?"})
    assert out["answer"] == "42"
    assert [c["tool"] for c in out["calls"]] == ["llm"]
    assert out["version"] == resolve_harness("reasoning_direct").sha[:12]
    pid = seed.harness_runner._worker.process.proc.pid

    async def both():
        return await asyncio.gather(*(seed.ainvoke({"question": f"What is {i} + {i}?"})
                                      for i in range(4)))

    answers = [o["answer"] for o in asyncio.run(both())]
    assert answers == [str(2 * i) for i in range(4)]
    assert [o["answer"] for o in seed.batch([{"question": "What is 9 - 3?"}] * 2)] == ["6", "6"]
    assert seed.harness_runner._worker.process.proc.pid == pid  # one warm worker served all


def test_untrusted_code_runs_in_another_process_unless_reviewed(tmp_path, sim) -> None:
    path = tmp_path / "pid_harness.py"
    path.write_text(PID_HARNESS)
    sandboxed = load_harness(path, model=sim)
    try:
        answer = sandboxed.invoke({"question": "What is 1 + 1?"})["answer"]
    finally:
        sandboxed.harness_runner.close()
    assert answer.startswith("2 pid=") and answer != f"2 pid={os.getpid()}"
    with pytest.raises(PermissionError, match="reviewed=True"):
        load_harness(path, model=sim, sandboxed=False)
    in_process = load_harness(path, model=sim, sandboxed=False, reviewed=True)
    assert in_process.invoke({"question": "What is 1 + 1?"})["answer"] == f"2 pid={os.getpid()}"


def test_subgraph_and_tool(seed) -> None:
    class App(TypedDict, total=False):
        question: str
        answer: str
        shout: str

    app = StateGraph(App)
    app.add_node("harness", seed)
    app.add_node("shout", lambda s: {"shout": s["answer"] + "!"})
    app.add_edge(START, "harness")
    app.add_edge("harness", "shout")
    app.add_edge("shout", END)
    out = app.compile().invoke({"question": "What is 20 + 1?"})
    assert (out["answer"], out["shout"]) == ("21", "21!")

    tool = seed.as_tool(name="solve", description="Solve an arithmetic question.")
    schema = tool.tool_call_schema.model_json_schema()
    assert schema["required"] == ["question"] and schema["properties"]["question"]["type"] == "string"
    assert tool.invoke({"question": "What is 5 * 5?"}) == "25"  # the content: the answer
    message = tool.invoke({"type": "tool_call", "id": "c1", "name": "solve",
                           "args": {"question": "What is 5 * 6?"}})
    assert message.content == "30" and message.tool_call_id == "c1"
    assert message.artifact["answer"] == "30" and message.artifact["calls"][0]["tool"] == "llm"


def test_run_directory_versions(tmp_path, sim) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(json.loads(AdaptConfig(
        task="rg:basic_arithmetic", run_dir=str(run), solver=sim).to_json())))
    seed_text = seed_source("reasoning_direct")
    evolved = seed_text.replace('PROMPT = """', 'PROMPT = """Think step by step. ', 1)
    with SQLiteLogStore(run) as store:
        seed_sha = store.put_version(seed_text, None, 0, "seed")
        new_sha = store.put_version(evolved, seed_sha, 1, "candidate 0")
        store.put_decision(round_=1, current_sha=seed_sha, chosen_sha=new_sha, policy="strict",
                           reason="better")
    found = resolve_harness(run)
    assert found.source == evolved and found.task == "rg:basic_arithmetic" and found.solver == sim
    assert resolve_harness(run, version=seed_sha[:10]).source == seed_text
    with pytest.raises(LookupError, match="matches 0 stored versions"):
        resolve_harness(run, version="ffffffff0000")
    graph = load_harness(run)  # the run's own Solver (the simulated server)
    try:
        out = graph.invoke({"question": "What is 8 + 5?"})
    finally:
        graph.harness_runner.close()
    assert out["answer"] == "13" and out["version"] == new_sha[:12]
    assert "Think step by step" in out["calls"][0]["args"]["messages"][-1]["content"]


def test_bad_harnesses_fail_clearly(tmp_path, sim) -> None:
    with pytest.raises(FileNotFoundError, match="not a seed"):
        load_harness(tmp_path / "missing.py")
    (tmp_path / "notrun").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_harness(tmp_path / "notrun")
    broken = tmp_path / "broken.py"
    broken.write_text("def build_graph(tools):\n    return (\n")
    with pytest.raises(HarnessInvalid, match="syntax"):
        load_harness(broken)
    raising = tmp_path / "raising.py"
    raising.write_text(PID_HARNESS.replace('reply = tools.llm(state["question"])',
                                           'raise ValueError("no luck today")'))
    graph = load_harness(raising, model=sim)
    try:
        with pytest.raises(HarnessRunError, match="no luck today") as info:
            graph.invoke({"question": "What is 1 + 1?"})
    finally:
        graph.harness_runner.close()
    assert info.value.kind == "harness" and "line 14" in info.value.traceback.replace(", in", " in")


LEFT_WARM = """
import sys
from harness_learning.graphs.serving.embed import load_harness
graph = load_harness("reasoning_direct", model=sys.argv[1])
print(graph.invoke({"question": "What is 2 + 2?"})["answer"])
print(graph.harness_runner._worker.process.scratch)
"""


def test_a_worker_left_warm_is_reaped_at_exit(tmp_path, sim) -> None:
    """A script that ends with its graph's worker still warm (the README's example does): the
    exit hook closes the worker on its loop. Python shuts its thread pools before atexit
    hooks run, and a cleanup that needed one stopped before reaping the worker: its transport
    raised "Event loop is closed" when collected, and its scratch directory stayed."""
    done = subprocess.run([sys.executable, "-c", LEFT_WARM, sim], cwd=tmp_path,
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    answer, scratch = done.stdout.split()
    assert answer == "4"
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not Path(scratch).exists()


@pytest.mark.slow
def test_local_model_sandboxed_and_reviewed(local_model_url) -> None:
    graph = load_harness("reasoning_direct", model="local", solver_params={"max_tokens": 48})
    try:
        out = graph.invoke({"question": "What is 2 + 3?"})
    finally:
        graph.harness_runner.close()
    (call,) = out["calls"]
    assert call["tool"] == "llm" and call["tokens"] > 0 and call["error"] is None
    assert isinstance(out["answer"], str) and out["answer"].strip()
    reviewed = load_harness("reasoning_direct", model="local", sandboxed=False, reviewed=True,
                            solver_params={"max_tokens": 48})
    # Same source, same greedy Solver: the in-process run gives the sandboxed run's answer.
    assert reviewed.invoke({"question": "What is 2 + 3?"})["answer"] == out["answer"]
