"""Pre-started workers: imports done, waiting for `load`, so a candidate starts warm."""

from __future__ import annotations

import asyncio
from collections import deque

from harness_learning.harnesses.sandbox.backend import SandboxBackend
from harness_learning.harnesses.sandbox.client import ToolHandler, Worker
from harness_learning.harnesses.sandbox.limits import Limits


class WorkerPool:
    """Keeps `size` workers starting or ready. Workers are single-use: a worker handed out by
    `acquire` has run (or will run) one candidate's code and is closed by its user."""

    def __init__(self, size: int = 2, limits: Limits | None = None,
                 backend: SandboxBackend | None = None) -> None:
        if size < 1:
            raise ValueError(f"WorkerPool size must be >= 1, got {size}")
        self.size = size
        self.limits = limits or Limits()
        self.backend = backend
        self._starting: deque[asyncio.Task[Worker]] = deque()
        self._spawning: dict[asyncio.Future, Worker] = {}  # by its `_starting` task, till ready
        self._closed = False

    async def __aenter__(self) -> WorkerPool:
        self.fill()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def fill(self) -> None:
        """Start workers in the background until `size` are starting or ready."""
        while not self._closed and len(self._starting) < self.size:
            self._starting.append(asyncio.ensure_future(self._new()))

    async def _new(self) -> Worker:
        worker = Worker(limits=self.limits, backend=self.backend)
        task = asyncio.current_task()
        if task is not None:
            self._spawning[task] = worker
        try:
            await worker.start()
        finally:
            self._spawning.pop(task, None)
        return worker

    async def acquire(self, toolbox: ToolHandler | None = None) -> Worker:
        """A started worker (the oldest one; a replacement starts at once)."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        self.fill()
        task = self._starting.popleft()
        self.fill()
        worker = await task
        if not worker.alive:
            await worker.close()
            return await self.acquire(toolbox)
        worker.bind(toolbox)
        worker.restart_clock()
        return worker

    async def close(self) -> None:
        """Close the idle workers. Starting ones are awaited, not cancelled: a start cut
        short could leave a process nobody reaps. One still importing is killed first (its
        start then fails at once): the replacements each `acquire` starts are mostly still
        importing when a run ends, and waiting out their imports added seconds to every run."""
        self._closed = True
        loop = asyncio.get_running_loop()
        tasks = [t for t in self._starting if t.get_loop() is loop]
        for task in tasks:  # those `acquire` took are its caller's, left alone
            if (worker := self._spawning.get(task)) is not None:
                worker.abort_start("the pool closed before the worker was ready")
        for stale in (t for t in self._starting if t.get_loop() is not loop):
            # Started under an event loop that has ended (one `asyncio.run` per call): its
            # streams went with that loop, so the process can only be killed.
            if stale.done() and not stale.cancelled() and stale.exception() is None:
                stale.result()._kill(("harness", "pool closed"))
        self._starting.clear()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, Worker):
                await outcome.close()
