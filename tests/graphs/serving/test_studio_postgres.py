"""The adapter served by `langgraph dev` with its runs logged in PostgreSQL: two threads driven
at once through `langgraph_sdk` against one server, each a one-round adaptation whose settings
name `store: postgresql://...`, both finish (the one whose edit is adopted after its approval,
a second server run of the thread), each run's log is in its own schema of the test
database (no log.sqlite in either run directory), and `harness-learn show RUN` reads each from
its run directory and `--store`. A thread whose settings name an unreachable database fails that run
with one line naming the store, and one whose run another process drives (the run's advisory
lock held) is refused with one line; the server goes on serving.

Under `langgraph dev` the server owns the thread's checkpoints (its own store); the run's log
is the adapter's, and goes where the thread's settings say. The models are the simulated
OpenAI endpoint of `sim_adapt` (real HTTP and litellm; task, sandbox, evaluator, graph and log
are the real ones)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import sim_adapt
from cli_run import cli, free_port
from studio_server import ALLOW_BLOCKING_WARNING, dev_server

from harness_learning.graphs.adapter.checkpoints import open_checkpointer
from harness_learning.graphs.serving.studio import MODEL_ENV, RUNS_ENV
from harness_learning.harnesses.rundir import RunDir, open_log_store

pytestmark = pytest.mark.timeout(240)

SETTINGS = {"task": "rg:basic_arithmetic", "task_options": {"n_dev": 4, "n_test": 1},
            "rounds": 1, "candidates": 1, "policy": "strict", "feedback": 2, "selection": 2,
            "concurrency": 2, "approval": True}


@pytest.fixture
def served(tmp_path):
    """One dev server and one simulated model endpoint for the whole test."""
    with sim_adapt.sim_server() as sim_url:
        model = f"openai/sim@{sim_url}"
        runs, log = tmp_path / "studio-runs", tmp_path / "server.log"
        with dev_server(log, {RUNS_ENV: str(runs), MODEL_ENV: model}) as url:
            yield url, model, log


def _where_it_failed(log: Path) -> str:
    """The server log around its first blocking-call report (else its tail): a failing
    assertion shows where, even when later runs' tracebacks fill the log's end."""
    text = log.read_text()
    at = min((i for i in (text.find("Blocking call"), text.find("BlockingError")) if i >= 0),
             default=-1)
    return text[max(at - 1500, 0):at + 1500] if at >= 0 else text[-3000:]


async def _adapt(client: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """One thread to its end: the events it streamed, the thread's final state, and whether it
    paused for approval (then approved: a second run, which takes the run's lock again)."""
    tid = (await client.threads.create())["thread_id"]
    events = [e async for e in client.runs.stream(tid, "adapter", input={}, context=settings,
                                                  stream_mode="updates")]
    state = await client.threads.get_state(tid)
    paused = any(task["interrupts"] for task in state["tasks"])  # not a failed run's next node
    if paused:
        events += [e async for e in client.runs.stream(
            tid, "adapter", command={"resume": {"approve": True}}, stream_mode="updates")]
    return {"events": events, "state": await client.threads.get_state(tid), "paused": paused}


def test_two_threads_log_in_postgres(served, postgres_url, tmp_path) -> None:
    from langgraph_sdk import get_client

    url, model, log = served
    run_dirs = [tmp_path / "run-a", tmp_path / "run-b"]
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    base = {**SETTINGS, "solver": model, "proposer": model, "store": postgres_url}

    async def go() -> list[dict[str, Any]]:
        client = get_client(url=url)
        both = await asyncio.gather(*(_adapt(client, {**base, "run_dir": str(d)})
                                      for d in run_dirs))
        broken = await _adapt(client, {**base, "store": dead,
                                       "run_dir": str(tmp_path / "run-dead")})
        store = await asyncio.to_thread(open_log_store, run_dirs[0])
        try:  # another process drives run-a: a thread reopening it is refused
            async with open_checkpointer(RunDir(run_dirs[0]), store, exclusive=True):
                locked = await _adapt(client, {**base, "run_dir": str(run_dirs[0])})
        finally:
            await asyncio.to_thread(store.close)
        return [*both, broken, locked]

    *both, broken, locked = asyncio.run(go())
    schemas = set()
    for run_dir, got in zip(run_dirs, both, strict=True):
        errors = [e.data for e in got["events"] if e.event == "error"]
        assert not errors, f"{errors}\n{_where_it_failed(log)}"
        values = got["state"]["values"]
        assert got["state"]["next"] == [] and values["stop_reason"] == "finished 1 rounds"
        assert values["run_dir"] == str(run_dir)
        run = RunDir(run_dir)
        assert not run.log.exists() and not run.checkpoints.exists()  # nothing in SQLite
        assert json.loads(run.config.read_text())["store"] == postgres_url
        schemas.add(json.loads(run.store_pointer.read_text())["schema"])
        shown = cli("show", run_dir, "--store", postgres_url)
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert f"· log {postgres_url}" in shown.stdout and "r1-c0" in shown.stdout, shown.stdout
    assert len(schemas) == 2  # a schema per run
    # the Proposer's replies alternate (sim_adapt): one thread's edit is adopted, after approval
    assert sorted(got["paused"] for got in both) == [False, True]

    (error,) = [e.data for e in broken["events"] if e.event == "error"]
    message = error["message"]
    assert message.startswith(f"the log store {dead} failed: ") and "\n" not in message, error
    (error,) = [e.data for e in locked["events"] if e.event == "error"]
    assert error["message"].startswith("another adapter process is running "), error
    text = log.read_text()
    assert ALLOW_BLOCKING_WARNING not in text
    assert "BlockingError" not in text and "Blocking call" not in text, _where_it_failed(log)
