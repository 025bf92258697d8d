"""Helpers of the sandbox tests: a scripted toolbox (control flow only) and harness sources."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from harness_learning.harnesses.sandbox import Limits, ToolReply, Worker, WorkerPool
from harness_learning.harnesses.sandbox.local import LocalBackend


class ScriptedToolbox:
    """Answers `llm` with a function of the prompt, after `delay_s`; records what it saw."""

    def __init__(self, reply: Any = "Answer: 4", delay_s: float = 0.0,
                 raises: BaseException | None = None) -> None:
        self.reply, self.delay_s, self.raises = reply, delay_s, raises
        self.seen: list[tuple[str, dict]] = []

    async def call(self, tool: str, args: dict[str, Any]) -> ToolReply:
        self.seen.append((tool, args))
        await asyncio.sleep(self.delay_s)
        if self.raises is not None:
            raise self.raises
        if tool == "search":
            return ToolReply([{"title": f"T{i}", "text": f"about {args['query']}", "score": 1.0 - i / 10}
                              for i in range(args.get("k", 5))])
        reply = self.reply(args) if callable(self.reply) else self.reply
        return ToolReply(reply, tokens=7)


def node_harness(body: str, imports: str = "") -> str:
    """A one-node harness whose node runs `body` (indented 8 spaces) and returns `answer`."""
    lines = "\n".join("        " + line for line in body.strip("\n").splitlines())
    return f"""
import os, sys, time, socket
{imports}
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

class State(TypedDict, total=False):
    question: str
    answer: str

def build_graph(tools):
    def node(state):
{lines}
        return {{"answer": str(answer)}}
    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g
"""


TEST_LIMITS = Limits(memory_mb=1536, pids=32, cpu_s=120, problem_timeout_s=30.0)


def run_alone(source: str, limits: Limits, toolbox: Any = None, timeout: float | None = None):
    """One problem in a worker of its own, for tests that need limits the pool's workers lack:
    (its outcome, whether the worker is still alive)."""

    async def go():
        async with Worker(toolbox or ScriptedToolbox(), limits) as worker:
            await worker.load(source)
            outcome = await worker.run("p1", {"question": "2+2?"}, timeout)
            return outcome, worker.alive

    return asyncio.run(go())


class Sandbox:
    """A session-wide event loop in a thread with a pool of warm workers, so tests do not
    each pay a cold worker start. Workers stay single-use: each test closes its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.pool = WorkerPool(size=2, limits=TEST_LIMITS)
        self.run(self.pool.__aenter__())

    def run(self, coro: Any, timeout: float = 120.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @contextlib.asynccontextmanager
    async def worker(self, toolbox: Any = None) -> AsyncIterator[Worker]:
        worker = await self.pool.acquire(toolbox or ScriptedToolbox())
        try:
            yield worker
        finally:
            await worker.close()

    def run_one(self, source: str, toolbox: Any = None, inputs: dict | None = None,
                timeout: float | None = None, keep: list | None = None) -> Any:
        """Load `source` in a warm worker, run one problem, close; return the outcome."""

        async def go():
            async with self.worker(toolbox) as worker:
                await worker.load(source)
                outcome = await worker.run("p1", inputs or {"question": "2+2?"}, timeout)
                if keep is not None:
                    keep.append(worker)
                return outcome

        return self.run(go())

    def close(self) -> None:
        self.run(self.pool.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox()
    yield box
    box.close()


@pytest.fixture(scope="session")
def protections() -> dict[str, bool]:
    return LocalBackend().protections()


@pytest.fixture
def need_bwrap(protections):
    if not protections["bwrap"]:
        pytest.skip("bubblewrap is not available here: no namespaces (install `bubblewrap`)")
