"""`harness-learn studio` as a new user starts it: from their own directory, with a settings file
that names their harness by a relative path, the sandbox backend left to `auto` (no
`HARNESS_SANDBOX`: the machine's default, as on a fresh install), and the real SmolLM2 in both
roles. A harness's graph renders (`GET /assistants/{id}/graph` is 200), a one-round adapter run
ends `success`, `seed_harness` is taken as `harness` is, and a misspelt setting is refused with
one line naming it instead of being dropped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from cli_run import HARNESS_LEARN, free_port
from studio_server import ALLOW_BLOCKING_WARNING, wait_ready

from harness_learning.harnesses.seeds import seed_source

pytestmark = pytest.mark.timeout(300)

MARK = "Answer with the number only."
SETTINGS = {"task_options": {"n_dev": 4, "n_test": 1}, "rounds": 1, "candidates": 1,
            "policy": "best_valid", "feedback": 2, "selection": 2, "concurrency": 2,
            "solver": "local", "proposer": "local:smollm2-135m", "proposer_max_tokens": 64,
            "report_chars": 1500, "edit_format": "function", "memory_tokens": 0}


def user_files(home: Path) -> Path:
    """The user's directory: their harness (the seed with a prompt of their own) and a settings
    file naming it relative to the file."""
    source = seed_source("reasoning_direct").replace('PROMPT = """', f'PROMPT = """{MARK} ', 1)
    (home / "agent").mkdir()
    (home / "agent" / "my_harness.py").write_text(source)
    (home / "settings.toml").write_text(
        'task = "rg:basic_arithmetic"\nseed_harness = "agent/my_harness.py"\n')
    return home / "settings.toml"


@pytest.fixture
def studio(tmp_path, local_model_url):
    """`harness-learn studio --settings settings.toml`, run from the user's directory."""
    home = tmp_path / "home"
    home.mkdir()
    settings = user_files(home)
    port, log = free_port(), tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("HARNESS_SANDBOX", "LANGGRAPH_ALLOW_BLOCKING", "LANGSMITH_API_KEY")}
    argv = [HARNESS_LEARN, "studio", "--port", str(port), "--jobs", "2",
            "--runs-dir", str(tmp_path / "runs"), "--settings", settings.name]
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, cwd=home, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log)
        yield url, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def get_json(url: str) -> tuple[int, Any]:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.status, json.loads(resp.read())


def test_studio_as_shipped(studio, tmp_path) -> None:
    from langgraph_sdk import get_client

    url, log = studio

    async def go() -> dict[str, Any]:
        client = get_client(url=url)
        by_graph = {a["graph_id"]: a["assistant_id"]
                    for a in await client.assistants.search(limit=50)}
        shape = await asyncio.to_thread(get_json, f"{url}/assistants/{by_graph['harness']}/graph")
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(tid, "adapter", input={}, context=SETTINGS)
        await client.runs.join(tid, run["run_id"])
        done = await client.runs.get(tid, run["run_id"])
        state = await client.threads.get_state(tid)
        typo = (await client.threads.create())["thread_id"]
        refused = [e async for e in client.runs.stream(
            typo, "adapter", input={},
            context={**SETTINGS, "seed_harness": "reasoning_direct", "roundz": 2},
            stream_mode="updates")]
        return {"shape": shape, "done": done, "state": state, "refused": refused}

    got = asyncio.run(go())
    text = log.read_text()
    status, shape = got["shape"]
    assert status == 200 and [n["id"] for n in shape["nodes"]] == ["__start__", "solve", "__end__"]
    assert got["done"]["status"] == "success", text[-4000:]
    values = got["state"]["values"]
    assert values["stop_reason"] == "finished 1 rounds", text[-4000:]
    run_dir = Path(values["run_dir"])
    stored = json.loads((run_dir / "config.json").read_text())
    # The settings file's relative harness path was read against the file, not the server's
    # working directory: the run starts from the user's harness.
    assert MARK in (run_dir / "inputs" / "start_harness.py").read_text() or \
        MARK in Path(stored["seed_harness"]).read_text()
    errors = [e.data["message"] for e in got["refused"] if e.event == "error"]
    # The misspelt key is named (the server would have dropped it); `seed_harness`, given
    # before it, is taken as `harness`, not refused.
    assert errors and "unknown setting 'roundz'" in errors[0], got["refused"]
    assert "seed_harness" not in errors[0] and "\n" not in errors[0]
    # The server ran from its own folder beside the runs, serving the package's graphs by
    # module (no checkout), and kept its state there.
    served = tmp_path / "runs" / ".langgraph-server"
    graphs = json.loads((served / "langgraph.json").read_text())["graphs"]
    assert graphs["adapter"] == "harness_learning.graphs.serving.studio:adapter"
    assert (served / ".langgraph_api").is_dir()
    assert ALLOW_BLOCKING_WARNING not in text  # the blocking-call detector was on
    assert "Blocking call" not in text and "BlockingError" not in text, text[-4000:]
