"""A simulated OpenAI-compatible chat server for benchmarks and fault tests.

It answers `/v1/chat/completions` and `/v1/models` on loopback with configurable latency,
concurrent slots (requests beyond them queue), generation speed, injected faults and
deterministic content, so harness code runs to completion and its scores can be checked.
Latency is `asyncio.sleep`, so 64 slots at 100 ms cost little CPU.

In process::

    with SimServer(latency_s=0.1, slots=64) as url:   # url ends with /v1
        ...

From a shell::

    python -m harness_learning.harnesses.llm.simserver --port 8123 --latency 0.1 --slots 64
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ERROR_KINDS = ("timeout", "429", "500", "malformed", "empty")
"""timeout: hang past any client timeout; 429: rate limited with Retry-After; 500: server
fault; malformed: a 200 whose body is not JSON; empty: a 200 with an empty completion."""

Reply = str | Callable[[re.Match[str]], str]

_WORDS = (
    "amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
    "juniper", "kelp", "lagoon", "meadow", "nickel", "orchid", "pebble", "quartz", "river",
    "saffron", "tundra", "umber", "violet", "willow", "xenon", "yarrow", "zephyr",
)  # fmt: skip


def _arithmetic(match: re.Match[str]) -> str:
    a, op, b = int(match["a"]), match["op"], int(match["b"])
    value = {"+": a + b, "-": a - b, "*": a * b, "x": a * b}[op]
    return f"Answer: {value}"


ARITHMETIC_RULE: tuple[str, Reply] = (
    r"[Ww]hat is (?P<a>-?\d+)\s*(?P<op>[-+*x])\s*(?P<b>-?\d+)",
    _arithmetic,
)
"""Answers "What is 3 + 4" correctly ("Answer: 7"), so tests can check scoring."""


def _stopped(text: str, finish: str, stop: str | Iterable[object] | None) -> tuple[str, str]:
    """The reply cut before the first of the request's stop sequences, as a real endpoint
    does (so a stop that matches at once gives an empty completion, finish "stop")."""
    stops = [stop] if isinstance(stop, str) else [s for s in stop or () if isinstance(s, str)]
    cuts = [text.find(s) for s in stops if s and s in text]
    return (text[: min(cuts)], "stop") if cuts else (text, finish)


def default_reply(prompt: str) -> str:
    """The reply when no rule matches: a word chosen by a hash of the prompt."""
    digest = hashlib.sha256(prompt.encode()).digest()
    return f"Answer: {_WORDS[int.from_bytes(digest[:4], 'big') % len(_WORDS)]}"


@dataclass(slots=True)
class SimConfig:
    """How the simulated server behaves; may be changed while it runs."""

    latency_s: float = 0.1
    jitter_s: float = 0.0
    slots: int = 64
    tokens_per_s: float = 0.0  # 0: output length adds no latency
    error_rate: float = 0.0
    error_kinds: tuple[str, ...] = ("429", "500")
    fail_first: int = 0  # the first N requests fail, cycling through error_kinds
    retry_after_s: float = 1.0
    hang_s: float = 600.0
    seed: int = 0
    rules: list[tuple[str, Reply]] = field(default_factory=lambda: [ARITHMETIC_RULE])
    model: str = "sim"

    def __post_init__(self) -> None:
        bad = [k for k in self.error_kinds if k not in ERROR_KINDS]
        if bad:
            raise ValueError(f"unknown error kinds {bad}; expected some of {ERROR_KINDS}")
        if self.slots < 1:
            raise ValueError("slots must be >= 1")


@dataclass(slots=True)
class SimStats:
    requests: int = 0
    served: int = 0
    in_flight: int = 0
    max_concurrency: int = 0
    active: int = 0
    max_active: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def errors_injected(self) -> int:
        return sum(self.errors.values())


def _invalid_params(body: dict[str, Any]) -> str | None:
    """llama-cpp-python's validation error for a temperature or top_p its schema refuses."""
    for name, high in (("temperature", 2.0), ("top_p", 1.0)):
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0.0 <= value <= high):
            return (f"1 validation error:\n  {{'type': 'value_error', 'loc': ('body', '{name}'), "
                    f"'msg': 'Input should be a number from 0 to {high:g}', 'input': {value!r}}}")
    return None


def _words(text: str) -> list[str]:
    return text.split()


class SimServer:
    """The server, run by a background thread with its own event loop."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", **config: Any) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("SimServer listens on loopback only")
        self.host, self.port = host, port
        self.config = SimConfig(**config)
        self.stats = SimStats()
        self.prompts: deque[str] = deque(maxlen=1000)
        self._rng = random.Random(self.config.seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._slots: asyncio.Semaphore | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def configure(self, **changes: Any) -> None:
        """Change behaviour while running (e.g. start failing, change latency)."""
        for name, value in changes.items():
            if not hasattr(self.config, name):
                raise AttributeError(f"SimConfig has no field {name!r}")
            setattr(self.config, name, value)
        self.config.__post_init__()
        if "seed" in changes:
            self._rng = random.Random(self.config.seed)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> str:
        """Start serving (again, on the same port after a stop); returns the base URL."""
        if self._thread is not None:
            return self.url
        ready = threading.Event()
        failure: list[BaseException] = []
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._serve())
            except BaseException as exc:  # reported to start()'s caller
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name=f"simserver:{self.port}", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"SimServer could not start on port {self.port}: {failure[0]}")
        return self.url

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._slots = asyncio.Semaphore(self.config.slots)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        if self.port == 0:
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        """Stop serving: open connections drop, hanging requests end."""
        if self._thread is None or self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            for task in list(self._tasks):
                task.cancel()
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(30)
        loop.close()
        self._thread = self._loop = self._runner = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- handlers ----------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": self.config.model, "object": "model"}]}
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        stats = self.stats
        stats.requests += 1
        stats.in_flight += 1
        stats.max_concurrency = max(stats.max_concurrency, stats.in_flight)
        try:
            body = await request.json()
            return await self._answer(body, self._pick_error())
        except json.JSONDecodeError:
            return web.json_response({"error": {"message": "request body is not JSON"}}, status=400)
        finally:
            stats.in_flight -= 1
            self._tasks.discard(task)

    def _pick_error(self) -> str | None:
        cfg = self.config
        kinds = cfg.error_kinds or ERROR_KINDS
        n = self.stats.requests
        if n <= cfg.fail_first:
            kind = kinds[(n - 1) % len(kinds)]
        elif cfg.error_rate > 0 and self._rng.random() < cfg.error_rate:
            kind = self._rng.choice(kinds)
        else:
            return None
        self.stats.errors[kind] = self.stats.errors.get(kind, 0) + 1
        return kind

    async def _answer(self, body: dict[str, Any], error: str | None) -> web.StreamResponse:
        cfg = self.config
        invalid = _invalid_params(body)
        if invalid:  # as llama-cpp-python's server answers a value its schema refuses
            return web.json_response({"error": {"message": invalid}}, status=500)
        if error == "429":
            headers = {"Retry-After": f"{cfg.retry_after_s:g}"}
            return web.json_response(
                {"error": {"message": "rate limited (simulated)", "type": "rate_limit"}},
                status=429, headers=headers,
            )  # fmt: skip
        if error == "timeout":
            await asyncio.sleep(cfg.hang_s)
        messages = body.get("messages") or []
        prompt = _last_user(messages)
        self.prompts.append(prompt)
        text, finish = self._reply(
            prompt, body.get("max_tokens") or body.get("max_completion_tokens")
        )
        text, finish = _stopped(text, finish, body.get("stop"))
        if error == "empty":
            text = ""
        delay = max(0.0, cfg.latency_s + self._rng.uniform(-cfg.jitter_s, cfg.jitter_s))
        if cfg.tokens_per_s > 0:
            delay += len(_words(text)) / cfg.tokens_per_s
        assert self._slots is not None
        async with self._slots:
            self.stats.active += 1
            self.stats.max_active = max(self.stats.max_active, self.stats.active)
            try:
                await asyncio.sleep(delay)
            finally:
                self.stats.active -= 1
        if error == "500":
            return web.json_response(
                {"error": {"message": "internal error (simulated)"}}, status=500
            )
        if error == "malformed":
            return web.Response(text='{"id": "x", "choices": [', content_type="application/json")
        if error is None:
            self.stats.served += 1  # counts good answers only
        return web.json_response(self._payload(messages, text, finish))

    def _reply(self, prompt: str, max_tokens: int | None) -> tuple[str, str]:
        text = None
        for pattern, reply in self.config.rules:
            match = re.search(pattern, prompt)
            if match:
                text = reply(match) if callable(reply) else match.expand(reply)
                break
        if text is None:
            text = default_reply(prompt)
        words = _words(text)
        if max_tokens is not None and len(words) > int(max_tokens):
            return " ".join(words[: int(max_tokens)]), "length"
        return text, "stop"

    def _payload(self, messages: list[dict[str, Any]], text: str, finish: str) -> dict[str, Any]:
        prompt_tokens = sum(len(_words(str(m.get("content") or ""))) for m in messages)
        completion_tokens = len(_words(text))
        return {
            "id": f"chatcmpl-sim-{self.stats.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.config.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _last_user(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # OpenAI content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _parse_rule(text: str) -> tuple[str, Reply]:
    pattern, sep, template = text.partition("=>")
    if not sep:
        raise argparse.ArgumentTypeError(f"rule {text!r}: expected REGEX=>TEMPLATE")
    re.compile(pattern)
    return pattern, template


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m harness_learning.harnesses.llm.simserver", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per call")
    parser.add_argument("--jitter", type=float, default=0.0, help="+/- seconds, uniform")
    parser.add_argument("--slots", type=int, default=64, help="concurrent requests served")
    parser.add_argument("--tps", type=float, default=0.0, help="output tokens per second")
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--error-kinds", default="429,500", help=f"comma list of {ERROR_KINDS}")
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="sim")
    parser.add_argument(
        "--rule",
        type=_parse_rule,
        action="append",
        default=[],
        help="REGEX=>TEMPLATE (\\1 groups), tried in order before the built-in arithmetic rule",
    )
    args = parser.parse_args(argv)
    server = SimServer(
        port=args.port, latency_s=args.latency, jitter_s=args.jitter, slots=args.slots,
        tokens_per_s=args.tps, error_rate=args.error_rate, retry_after_s=args.retry_after,
        error_kinds=tuple(k for k in args.error_kinds.split(",") if k), seed=args.seed,
        model=args.model, rules=[*args.rule, ARITHMETIC_RULE],
    )  # fmt: skip
    print(server.start(), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(3600)
    server.stop()


if __name__ == "__main__":
    main()
