"""A Studio thread writes its experience library when it finishes, as `adapt` and `resume` do at
their end: the adapter served by `langgraph dev` (blocking-call detector on), driven through
`langgraph_sdk` as Studio drives it, two threads at once, one with a directory library and one
with a postgresql:// library typed into its settings (the session's throwaway server). Each
thread's adopted edit is in its library when the thread's run has ended, with the outcome of
that thread's run, and the run's log says so (`experience_written`).

The models are the simulated OpenAI endpoint of `sim_adapt`, one per thread (its Proposer's
first reply is the edit that makes its Solver right, so `strict` adopts it); task, sandbox,
evaluator, graph, log and libraries are the real ones."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import ExitStack
from typing import Any

import pytest
import sim_adapt
from studio_server import ALLOW_BLOCKING_WARNING, dev_server

from harness_learning.graphs.serving.studio import RUNS_ENV
from harness_learning.harnesses.experience import Library, give_location
from harness_learning.harnesses.rundir import RunDir

pytestmark = pytest.mark.timeout(300)

SETTINGS = {"task": "rg:basic_arithmetic", "task_options": {"n_dev": 4, "n_test": 1},
            "rounds": 1, "candidates": 1, "policy": "strict", "feedback": 2, "selection": 2,
            "concurrency": 2}


async def _finish(client: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """One thread run to its end; its events and final state."""
    tid = (await client.threads.create())["thread_id"]
    events = [e async for e in client.runs.stream(tid, "adapter", input={}, context=settings,
                                                  stream_mode="updates")]
    return {"events": events, "state": await client.threads.get_state(tid)}


def test_finished_threads_write_their_libraries(postgres_url, tmp_path) -> None:
    import psycopg
    from langgraph_sdk import get_client

    database = f"hl_studio_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    libraries = [str(tmp_path / "library"),
                 give_location(f"{postgres_url.rsplit('/', 1)[0]}/{database}")]  # ours too
    run_dirs = [tmp_path / "run-dir-library", tmp_path / "run-pg-library"]
    log = tmp_path / "server.log"
    with ExitStack() as stack:
        models = [f"openai/sim@{stack.enter_context(sim_adapt.sim_server())}" for _ in libraries]
        url = stack.enter_context(dev_server(log, {RUNS_ENV: str(tmp_path / "runs")}))

        async def go() -> list[dict[str, Any]]:
            client = get_client(url=url)
            return await asyncio.gather(*(
                _finish(client, {**SETTINGS, "solver": model, "proposer": model,
                                 "experience": library, "run_dir": str(run_dir)})
                for model, library, run_dir in zip(models, libraries, run_dirs, strict=True)))

        threads = asyncio.run(go())

    for library, run_dir, thread in zip(libraries, run_dirs, threads, strict=True):
        errors = [e.data for e in thread["events"] if e.event == "error"]
        assert not errors, f"{errors}\n{log.read_text()[-3000:]}"
        state = thread["state"]
        assert state["next"] == [] and state["values"]["stop_reason"] == "finished 1 rounds"
        (candidate,) = state["values"]["rounds"][0]["candidates"]
        assert state["values"]["current_sha"] == candidate["sha"]  # the edit was adopted
        with RunDir(run_dir).open_store() as store:
            run_id = store.get_run().run_id
            written = [e.payload for e in store.iter_events(kinds=["experience_written"])]
        with Library(library) as lib:
            (entry,) = lib.entries()
        (outcome,) = entry.outcomes
        assert entry.kind == "edit" and "MARK-A" in entry.diff, entry
        assert (outcome.run, outcome.round, outcome.verdict) == (run_id, 1, "adopted")
        assert outcome.selection_gain > 0 and outcome.task == "rg:basic_arithmetic"
        assert [(w["library"], w["entries"]) for w in written] == [(library, 1)]
    text = log.read_text()
    assert ALLOW_BLOCKING_WARNING not in text
    assert "BlockingError" not in text and "Blocking call" not in text, text[-3000:]
