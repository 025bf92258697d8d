from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.llm.simserver import default_reply


def _post(
    url: str, body: dict[str, Any], timeout: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _ask(url: str, prompt: str, **extra: Any) -> dict[str, Any]:
    status, _, body = _post(
        url, {"model": "sim", "messages": [{"role": "user", "content": prompt}], **extra}
    )
    assert status == 200, body
    return json.loads(body)


def test_arithmetic_rule_and_usage(sim: SimServer) -> None:
    reply = _ask(sim.url, "Question: What is 12 * 3?")
    assert reply["choices"][0]["message"]["content"] == "Answer: 36"
    assert reply["usage"]["prompt_tokens"] == 6  # whitespace words
    assert reply["usage"]["completion_tokens"] == 2
    assert sim.stats.served == 1


def test_default_reply_depends_on_the_prompt_only(sim: SimServer) -> None:
    a1 = _ask(sim.url, "name a colour")["choices"][0]["message"]["content"]
    a2 = _ask(sim.url, "name a colour")["choices"][0]["message"]["content"]
    assert a1 == a2 == default_reply("name a colour")
    replies = {default_reply(f"prompt {i}") for i in range(50)}
    assert len(replies) > 5


def test_custom_rules_and_max_tokens() -> None:
    with SimServer(latency_s=0, rules=[(r"echo (\w+)", r"you said \1 twice \1")]) as url:
        reply = _ask(url, "echo tulip")
        assert reply["choices"][0]["message"]["content"] == "you said tulip twice tulip"
        short = _ask(url, "echo tulip", max_tokens=2)
        assert short["choices"][0]["message"]["content"] == "you said"
        assert short["choices"][0]["finish_reason"] == "length"


def test_slots_bound_active_requests() -> None:
    server = SimServer(latency_s=0.1, slots=2)
    with server as url:
        threads = [threading.Thread(target=_ask, args=(url, f"q{i}")) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert server.stats.max_active == 2
    assert server.stats.max_concurrency > 2
    assert server.stats.served == 6


@pytest.mark.parametrize("kind", ["429", "500", "malformed", "empty"])
def test_injected_errors(kind: str) -> None:
    server = SimServer(latency_s=0, fail_first=1, error_kinds=(kind,), retry_after_s=7)
    with server as url:
        status, headers, body = _post(url, {"messages": [{"role": "user", "content": "hi"}]})
        ok = _ask(url, "hi")
    assert server.stats.errors == {kind: 1}
    assert ok["choices"][0]["message"]["content"]
    if kind == "429":
        assert status == 429 and headers["Retry-After"] == "7"
    elif kind == "500":
        assert status == 500
    elif kind == "malformed":
        assert status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)
    else:
        assert json.loads(body)["choices"][0]["message"]["content"] == ""


def test_timeout_kind_hangs_until_the_client_gives_up() -> None:
    server = SimServer(latency_s=0, fail_first=1, error_kinds=("timeout",), hang_s=30)
    with server as url, pytest.raises(TimeoutError):
        _post(url, {"messages": [{"role": "user", "content": "hi"}]}, timeout=0.3)


def test_seeded_error_rate_is_reproducible() -> None:
    def run() -> dict[str, int]:
        server = SimServer(latency_s=0, error_rate=0.5, error_kinds=("500", "429"), seed=3)
        with server as url:
            for i in range(20):
                _post(url, {"messages": [{"role": "user", "content": str(i)}]})
        return dict(server.stats.errors)

    first = run()
    assert first == run()
    assert 0 < sum(first.values()) < 20


def test_stop_and_restart_on_the_same_port(sim: SimServer) -> None:
    url = sim.url
    _ask(url, "before")
    sim.stop()
    with pytest.raises(urllib.error.URLError):
        _post(url, {"messages": [{"role": "user", "content": "down"}]}, timeout=2)
    assert sim.start() == url
    assert _ask(url, "after")["choices"][0]["message"]["content"]
    assert sim.stats.served == 2


def test_rejects_non_loopback_and_unknown_kinds() -> None:
    with pytest.raises(ValueError):
        SimServer(host="0.0.0.0")
    with pytest.raises(ValueError):
        SimServer(error_kinds=("teapot",))


def test_command_line_server() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_learning.harnesses.llm.simserver", "--port", str(port),
         "--latency", "0", "--rule", "capital of (\\w+)=>Answer: \\1ville"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(f"{url}/models", timeout=5) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "sim"
        assert (
            _ask(url, "capital of Spain?")["choices"][0]["message"]["content"]
            == "Answer: Spainville"
        )
        assert _ask(url, "What is 2 + 2")["choices"][0]["message"]["content"] == "Answer: 4"
    finally:
        proc.terminate()
        proc.wait(10)


def test_stop_sequences_cut_the_reply_as_an_endpoint_does() -> None:
    with SimServer(latency_s=0) as url:
        cut = _ask(url, "What is 3 + 4?", stop=[": ", "+"])["choices"][0]
        empty = _ask(url, "What is 3 + 4?", stop="A")["choices"][0]
    assert (cut["message"]["content"], cut["finish_reason"]) == ("Answer", "stop")
    assert (empty["message"]["content"], empty["finish_reason"]) == ("", "stop")
