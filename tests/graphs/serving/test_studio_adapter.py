"""The adapter served by `langgraph dev` with its blocking-call detector on (no
`--allow-blocking`), driven through `langgraph_sdk` as Studio drives it: the settings form (its
context schema), what a run takes and returns; a thread started with settings, streamed to its
approval interrupt, approved with `Command(resume=...)` and finished, then read, without the
settings being repeated; settings that contradict a started thread refused.

Control flow runs against the simulated OpenAI endpoint of `sim_adapt` (real HTTP and litellm;
the task, sandbox, evaluator, graph and log are the real ones); the slow test runs a real
local model (llama.cpp on loopback) as Solver and Proposer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import sim_adapt
from studio_server import ALLOW_BLOCKING_WARNING, dev_server

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.policies import POLICIES
from harness_learning.graphs.serving.studio import MODEL_ENV, RUNS_ENV

pytestmark = pytest.mark.timeout(300)

NOTE = "Keep the prompt short."
SETTINGS = {"task": "rg:basic_arithmetic", "task_options": {"n_dev": 4, "n_test": 1},
            "rounds": 1, "candidates": 1, "policy": "strict", "feedback": 2, "selection": 2,
            "concurrency": 2, "approval": True}


@pytest.fixture
def sim_model():
    """A fresh endpoint per test: its Proposer's first reply is the MARK-A edit, which makes
    the simulated Solver right, so `strict` adopts it and the approval gate asks."""
    with sim_adapt.sim_server() as url:
        yield f"openai/sim@{url}"


@pytest.fixture
def served(tmp_path, sim_model):
    runs = tmp_path / "studio-runs"
    log = tmp_path / "server.log"
    with dev_server(log, {RUNS_ENV: str(runs), MODEL_ENV: sim_model}) as url:
        yield url, runs, log


def assert_never_blocked(log: Path) -> None:
    text = log.read_text()
    assert ALLOW_BLOCKING_WARNING not in text  # the detector was on
    assert "BlockingError" not in text and "Blocking call" not in text, text[-3000:]


async def assistant_of(client: Any, graph: str) -> str:
    assistants = await client.assistants.search(graph_id=graph, limit=5)
    return assistants[0]["assistant_id"]


def test_settings_form_input_and_output_schemas(served) -> None:
    """The server lists AdaptConfig's settings, with their help texts, as the adapter's context
    schema (Studio's form); the input is what a person gives, the output what a run returns."""
    from langgraph_sdk import get_client

    url, _, log = served

    async def go() -> dict:
        client = get_client(url=url)
        return await client.assistants.get_schemas(await assistant_of(client, "adapter"))

    schemas = asyncio.run(go())
    form = schemas["context_schema"]["properties"]
    assert {"task", "data", "metric", "harness", "solver", "proposer", "rounds", "candidates",
            "policy", "approval", "max_solver_calls", "max_cost_usd", "run_dir"} <= set(form)
    helps = {name: info.description for name, info in AdaptConfig.model_fields.items()}
    assert form["rounds"]["description"] == helps["rounds"]  # one source of settings
    assert form["harness"]["description"] == helps["seed_harness"]
    assert set(POLICIES) == set(form["policy"]["anyOf"][0]["enum"])  # every policy, no other
    assert form["task"]["default"] == "rg:basic_arithmetic" and form["approval"]["default"] is False
    assert set(schemas["input_schema"]["properties"]) == {"human_feedback"}
    assert {"run_dir", "current_sha", "best_score", "rounds", "stop_reason", "spent"} == set(
        schemas["output_schema"]["properties"])
    assert "report" in schemas["state_schema"]["properties"]  # Studio still shows the state
    assert_never_blocked(log)


def test_a_thread_keeps_its_settings(served, sim_model) -> None:
    """Start with settings, stream to the approval interrupt, approve with a bare
    `Command(resume=...)`, finish, read the state: the settings are given once."""
    from langgraph_sdk import get_client

    url, runs, log = served
    settings = {**SETTINGS, "solver": sim_model, "proposer": sim_model}

    async def go() -> dict:
        client = get_client(url=url)
        tid = (await client.threads.create())["thread_id"]
        first = [e async for e in client.runs.stream(
            tid, "adapter", input={"human_feedback": [NOTE]}, context=settings,
            stream_mode="updates")]
        paused = await client.threads.get_state(tid)
        output = await client.runs.wait(tid, "adapter", command={"resume": {"approve": True}})
        final = await client.threads.get_state(tid)
        again = [e async for e in client.runs.stream(  # contradicting settings: refused
            tid, "adapter", input={}, context={"rounds": 3}, stream_mode="updates")]
        return {"tid": tid, "first": first, "paused": paused, "output": output,
                "final": final, "again": again}

    got = asyncio.run(go())
    nodes = [next(iter(e.data)) for e in got["first"] if e.event == "updates"]
    assert nodes == ["init", "sample", "evaluate_current", "candidate", "race", "merge",
                     "__interrupt__"], \
        f"{got['first']}\n{log.read_text()[-3000:]}"
    paused = got["paused"]
    (question,) = [i["value"] for task in paused["tasks"] for i in task["interrupts"]]
    assert paused["next"] == ["select"] and '+PROMPT = """MARK-A ' in question["diff"]
    assert NOTE in paused["values"]["report"]  # the input reached the Proposer's report

    run_dir = runs / got["tid"]  # no run_dir setting: the thread's own directory
    output = got["output"]
    assert set(output) <= {"run_dir", "current_sha", "best_score", "rounds", "stop_reason",
                           "spent"}, output
    assert output["stop_reason"] == "finished 1 rounds" and output["run_dir"] == str(run_dir)
    (round1,) = output["rounds"]
    (candidate,) = round1["candidates"]
    assert round1["approved"] is True and round1["adopted"]
    assert output["current_sha"] == candidate["sha"] and candidate["selection_score"] == 1.0

    final = got["final"]
    assert final["next"] == [] and final["values"]["current_sha"] == candidate["sha"]
    stored = json.loads((run_dir / "config.json").read_text())
    assert (stored["solver"], stored["rounds"], stored["policy"]) == (sim_model, 1, "strict")
    assert sorted(p.name for p in runs.iterdir()) == [got["tid"]]  # no stray run directory

    errors = [e.data for e in got["again"] if e.event == "error"]
    assert errors and "rounds: 3 != 1" in errors[0]["message"], got["again"]
    assert json.loads((run_dir / "config.json").read_text()) == stored
    assert_never_blocked(log)


def test_a_thread_runs_on_the_docker_backend(tmp_path, sim_model) -> None:
    """Studio's path with the harness in containers: under the blocking-call detector a thread
    evaluates and proposes up to its approval interrupt, and the run's log says the backend."""
    import sqlite3

    from docker_engine import require_engine
    from langgraph_sdk import get_client

    require_engine()
    runs, log = tmp_path / "studio-runs", tmp_path / "server.log"
    settings = {**SETTINGS, "solver": sim_model, "proposer": sim_model}

    async def go(url: str) -> tuple[str, list]:
        client = get_client(url=url)
        tid = (await client.threads.create())["thread_id"]
        return tid, [e async for e in client.runs.stream(tid, "adapter", input={},
                                                          context=settings,
                                                          stream_mode="updates")]

    env = {RUNS_ENV: str(runs), MODEL_ENV: sim_model, "HARNESS_SANDBOX": "docker"}
    with dev_server(log, env) as url:
        tid, events = asyncio.run(go(url))
    nodes = [next(iter(e.data)) for e in events if e.event == "updates"]
    assert nodes[-1] == "__interrupt__" and "evaluate_current" in nodes, \
        f"{events}\n{log.read_text()[-3000:]}"
    with sqlite3.connect(runs / tid / "log.sqlite") as db:
        said = [json.loads(p)["chosen"] for (p,) in db.execute(
            "SELECT payload FROM events WHERE kind = 'sandbox'")]
    assert len(said) == 1 and said[0].startswith("sandbox: docker (as asked; "), said
    assert_never_blocked(log)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_thread_with_the_local_models(local_model_url, tmp_path) -> None:
    """The same path with a real model in both roles (SmolLM2-135M: Qwen2.5-Coder, the usual
    Proposer, needs minutes for one prompt here): the candidate is judged, one adopted waits
    for approval, and the thread then finishes from its stored settings."""
    from langgraph_sdk import get_client

    runs, log = tmp_path / "studio-runs", tmp_path / "server.log"
    settings = {**SETTINGS, "solver": "local", "proposer": "local:smollm2-135m",
                "policy": "best_valid", "proposer_max_tokens": 128, "report_chars": 2000}

    async def go(url: str) -> tuple[list, dict]:
        client = get_client(url=url)
        tid = (await client.threads.create())["thread_id"]
        events = [e async for e in client.runs.stream(tid, "adapter", input={},
                                                      context=settings, stream_mode="updates")]
        state = await client.threads.get_state(tid)
        if state["next"]:  # the candidate was valid: best_valid adopts it, after approval
            events += [e async for e in client.runs.stream(
                tid, "adapter", command={"resume": {"approve": True}}, stream_mode="updates")]
            state = await client.threads.get_state(tid)
        return events, state

    with dev_server(log, {RUNS_ENV: str(runs)}) as url:
        events, state = asyncio.run(go(url))
    assert not [e for e in events if e.event == "error"], f"{events}\n{log.read_text()[-3000:]}"
    values = state["values"]
    assert state["next"] == [] and values["stop_reason"] == "finished 1 rounds"
    (candidate,) = values["rounds"][0]["candidates"]
    assert candidate["valid"] or candidate["invalid_reason"]
    assert values["rounds"][0]["approved"] is (True if candidate["valid"] else None)
    stored = json.loads(Path(values["run_dir"], "config.json").read_text())
    assert (stored["solver"], stored["proposer"]) == ("local", "local:smollm2-135m")
    assert_never_blocked(log)
