"""The parent's record of one problem in flight on a sandbox worker (client.py serves it)."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness_learning.harnesses.contract import ToolCall


class RunObserver(Protocol):
    """Who watches a served run from the parent (`graphs.serving.mirror`): it gets the worker's step
    messages and wraps each tool call, so the caller's callbacks see them. Its `config`
    (recursion limit, tags, metadata) goes to the worker with the run."""

    config: dict[str, Any]

    def step(self, message: dict[str, Any]) -> None: ...

    def tool_call(self, tool: str, args: dict[str, Any], node: Any,
                  call: Awaitable[Any]) -> Awaitable[Any]: ...


@dataclass
class ProblemRun:
    """One problem in flight on a worker: its pending answer, its trace so far, its call counts
    and the time its tool calls have paused its wall-clock limit."""

    problem_id: str
    future: asyncio.Future
    calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    llm_calls: int = 0
    tool_calls: int = 0
    inflight: int = 0
    paused_since: float = 0.0
    paused_total: float = 0.0
    observer: RunObserver | None = None
    trace_left: int = 0
    """Bytes its stored trace may still take (`Limits.trace_problem_bytes` at the start)."""
    context: contextvars.Context | None = None
    """The caller's context when the run started, kept for a traced run only: its tool calls
    are served in a copy of it, so their spans nest under the candidate that ran it."""

    def pause(self) -> None:
        """Time spent serving the problem's tool calls does not count against its limit."""
        if self.inflight == 0:
            self.paused_since = time.perf_counter()
        self.inflight += 1

    def unpause(self) -> None:
        self.inflight -= 1
        if self.inflight == 0:
            self.paused_total += time.perf_counter() - self.paused_since

    def paused_s(self) -> float:
        ongoing = time.perf_counter() - self.paused_since if self.inflight else 0.0
        return self.paused_total + ongoing

    async def wait(self, t0: float, limit: float) -> Any:
        """The run's result, or TimeoutError once its own time (wall time less the time its
        tool calls spent in the parent) passes `limit`."""
        while True:
            left = limit + self.paused_s() - (time.perf_counter() - t0)
            if left <= 0 and not self.inflight:
                raise TimeoutError
            try:
                return await asyncio.wait_for(asyncio.shield(self.future), max(left, 1.0))
            except TimeoutError:
                continue

    def count_call(self, solver: bool, limits: Any) -> str | None:
        """Count one tool call; why the run must stop, past its Solver-call or tool-call cap
        (`Limits.llm_calls_per_problem`, `Limits.tool_calls_per_problem`), else None."""
        self.tool_calls += 1
        self.llm_calls += solver
        for made, cap, what, name in (
                (self.llm_calls, limits.llm_calls_per_problem, "Solver", "llm_calls_per_problem"),
                (self.tool_calls, limits.tool_calls_per_problem, "tool", "tool_calls_per_problem")):
            if made > cap:
                return f"the harness made more than {cap} {what} calls on this problem (Limits.{name})"
        return None
