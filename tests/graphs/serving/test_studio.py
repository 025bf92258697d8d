"""`langgraph dev` serving langgraph.json, driven through `langgraph_sdk` like Studio drives it:
a seed harness run, a one-round adapter run (streamed), its state schema, and the run
directory's version served by the `harness` graph. The models are a simulated OpenAI server
(real HTTP, real litellm) so this stays quick; the real local model is covered in test_embed."""

from __future__ import annotations

import asyncio

import pytest
from studio_server import dev_server

from harness_learning.cli.studio_cmd import dev_command, offline_env
from harness_learning.graphs.serving.studio import MODEL_ENV, RUNS_ENV
from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.llm.simserver import ARITHMETIC_RULE
from harness_learning.harnesses.seeds import seed_source

pytestmark = pytest.mark.timeout(240)

SEED_LINE = next(line for line in seed_source("reasoning_direct").splitlines()
                 if line.startswith('PROMPT = """'))
NEW_LINE = SEED_LINE.replace('PROMPT = """', 'PROMPT = """Be careful. ', 1)
EDIT = f"I will ask the Solver to be careful.\n<<<<<<< SEARCH\n{SEED_LINE}\n=======\n{NEW_LINE}\n>>>>>>> REPLACE"
GRAPHS = {"adapter", "harness", "reasoning_direct", "multihop_two_hop", "baseline_tool_loop"}


def test_every_graph_factory_resolves_its_annotations() -> None:
    """The server picks each factory's arguments from its resolved annotations, the return's
    too: a name imported for type checking only would leave the adapter without its runtime."""
    import typing

    from langgraph_sdk.runtime import ServerRuntime

    from harness_learning.graphs.serving import studio

    for name in GRAPHS:
        hints = typing.get_type_hints(getattr(studio, name), localns={"ServerRuntime": ServerRuntime})
        assert {"config", "return"} <= set(hints), name
    assert typing.get_type_hints(studio.adapter, localns={"ServerRuntime": ServerRuntime}
                                 )["runtime"] is ServerRuntime


@pytest.fixture(scope="module")
def sim():
    rules = [(r"## How to answer", lambda m: EDIT), ARITHMETIC_RULE]
    with SimServer(latency_s=0.01, rules=rules) as url:
        yield f"openai/sim@{url}"


@pytest.fixture(scope="module")
def server(sim, tmp_path_factory):
    runs = tmp_path_factory.mktemp("studio-runs")
    log = runs / "server.log"
    with dev_server(log, {RUNS_ENV: str(runs), MODEL_ENV: sim}) as url:
        yield url, runs, log


def test_graphs_and_adapter_state_schema(server) -> None:
    from langgraph_sdk import get_client

    url, _, _ = server

    async def go():
        client = get_client(url=url)
        assistants = await client.assistants.search(limit=50)
        by_graph = {a["graph_id"]: a["assistant_id"] for a in assistants}
        schemas = await client.assistants.get_schemas(by_graph["adapter"])
        harness = await client.assistants.get_schemas(by_graph["reasoning_direct"])
        return by_graph, schemas, harness

    by_graph, schemas, harness = asyncio.run(go())
    assert set(by_graph) >= GRAPHS
    state = schemas["state_schema"]
    assert {"rounds", "candidates", "current_sha", "best_score", "report"} <= set(state["properties"])
    defs = state.get("$defs") or state.get("definitions") or {}
    candidate = defs["CandidateView"]["properties"]
    assert {"diff", "valid", "selection_score", "reward", "invalid_reason"} <= set(candidate)
    assert {"decision", "adopted", "approved"} <= set(defs["RoundView"]["properties"])
    assert harness["input_schema"]["required"] == ["question"]
    assert "answer" in harness["output_schema"]["properties"]


def test_seed_harness_run_streams_an_answer(server, sim) -> None:
    from langgraph_sdk import get_client

    url, _, log = server

    async def go():
        client = get_client(url=url)
        thread = await client.threads.create()
        events = [e async for e in client.runs.stream(
            thread["thread_id"], "reasoning_direct", input={"question": "What is 17 + 25?"},
            config={"configurable": {"model": sim}}, stream_mode="updates")]
        state = await client.threads.get_state(thread["thread_id"])
        return events, state["values"]

    events, values = asyncio.run(go())
    updates = [e.data for e in events if e.event == "updates"]
    assert updates and "solve" in updates[-1], f"{events}\n{log.read_text()[-3000:]}"  # its own node
    assert values["answer"] == "42"  # the simulated Solver's arithmetic, through the sandbox
    assert values["calls"][0]["tool"] == "llm" and "17 + 25" in values["calls"][0]["args"]["messages"][-1]["content"]


def test_adapter_run_with_approval_then_serve_its_version(server, sim, tmp_path) -> None:
    """As in Studio: the run pauses before adopting; a person approves; the run finishes; the
    `harness` graph then serves the adopted version."""
    from langgraph_sdk import get_client

    url, _, log = server
    run_dir = tmp_path / "run"
    configurable = {"task": "rg:basic_arithmetic", "solver": sim, "proposer": sim,
                    "task_options": {"n_dev": 4, "n_test": 1}, "rounds": 1, "candidates": 1,
                    "policy": "best_valid", "feedback": 2, "selection": 2, "concurrency": 2,
                    "approval": True, "run_dir": str(run_dir)}
    config = {"configurable": configurable}

    async def go():
        client = get_client(url=url)
        tid = (await client.threads.create())["thread_id"]
        events = [e async for e in client.runs.stream(
            tid, "adapter", input={}, config=config, stream_mode=["updates", "values"])]
        paused = await client.threads.get_state(tid)
        events += [e async for e in client.runs.stream(
            tid, "adapter", command={"resume": {"approve": True}}, config=config,
            stream_mode="updates")]
        final = (await client.threads.get_state(tid))["values"]
        served = await client.runs.wait(None, "harness", input={"question": "What is 2 + 2?"},
                                        config={"configurable": {"run_dir": str(run_dir),
                                                                 "model": sim}})
        return events, paused, final, served

    events, paused, final, served = asyncio.run(go())
    errors = [e.data for e in events if e.event == "error"]
    assert not errors, f"{errors}\n{log.read_text()[-3000:]}"
    nodes = [next(iter(e.data)) for e in events if e.event == "updates"]
    assert nodes[:3] == ["init", "sample", "evaluate_current"]
    assert {"candidate", "__interrupt__", "select", "finish"} <= set(nodes)
    (question,) = [i["value"] for task in paused["tasks"] for i in task["interrupts"]]
    assert question["round"] == 1 and f"+{NEW_LINE}" in question["diff"]
    assert paused["next"] == ["select"] and "stop_reason" not in paused["values"]
    assert final["stop_reason"] == "finished 1 rounds"
    (round1,) = final["rounds"]
    (cand,) = round1["candidates"]
    assert cand["valid"] and cand["sha"] and f"+{NEW_LINE}" in cand["diff"]
    assert 0.0 <= cand["selection_score"] <= 1.0
    assert round1["approved"] is True and round1["adopted"] and final["current_sha"] == cand["sha"]
    assert (run_dir / "config.json").exists()
    # The `harness` graph serves what the run holds now, in the sandbox.
    assert served["version"] == final["current_sha"][:12]
    assert served["answer"] == "4"


def test_dev_command_is_offline_and_quiet() -> None:
    argv = dev_command(8123, jobs=4)
    assert argv[1] == "dev" and "--no-reload" in argv and "--no-browser" in argv
    assert "--allow-blocking" not in argv  # the server's blocking-call detector stays on
    assert argv[argv.index("--n-jobs-per-worker") + 1] == "4"
    assert "--no-reload" not in dev_command(8123, reload=True)
    env = offline_env({"PATH": "/bin"})
    assert env["LANGGRAPH_CLI_NO_ANALYTICS"] == "1" and env["LANGGRAPH_NO_VERSION_CHECK"] == "true"
    assert env["LANGSMITH_TRACING"] == "false"
