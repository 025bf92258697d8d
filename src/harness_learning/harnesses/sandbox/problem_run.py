"""The parent's record of one problem in flight on a sandbox worker (client.py serves it)."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harness_learning.harnesses.contract import ToolCall, ToolInputError

if TYPE_CHECKING:
    from harness_learning.harnesses.sandbox.limits import Limits


class RunObserver(Protocol):
    """Who watches a served run from the parent (`graphs.serving.mirror`): it gets the worker's step
    messages and wraps each tool call, so the caller's callbacks see them. Its `config`
    (recursion limit, tags, metadata) goes to the worker with the run."""

    config: dict[str, Any]

    def step(self, message: dict[str, Any]) -> None: ...

    def tool_call(self, tool: str, args: dict[str, Any], node: object,
                  call: Awaitable[Any]) -> Awaitable[Any]: ...


@dataclass
class ProblemRun:
    """One problem in flight on a worker: its pending answer, its trace so far, its call counts
    and its clock: `timeout` of its own time from `started`, plus the time the parent spent
    serving its Solver and retriever calls, up to `wait_s` (`Limits.problem_wait_s`)."""

    problem_id: str
    future: asyncio.Future
    timeout: float = float("inf")
    wait_s: float = 0.0
    started: float = field(default_factory=time.perf_counter)
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
        """Time spent serving one of the problem's Solver or retriever calls (`WAIT_OPS`)
        does not count against its limit, up to `wait_s`."""
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

    def left_s(self, grace: float = 0.0) -> float:
        """Its time left: `timeout` (plus `grace`) and its waits on the parent up to `wait_s`,
        less the wall time since it started. Its `tools.python` runs are capped by this."""
        waited = min(self.paused_s(), self.wait_s)
        return self.timeout + grace + waited - (time.perf_counter() - self.started)

    async def wait(self, grace: float, until: float = float("inf")) -> Any:
        """The run's result; TimeoutError once its time (`left_s(grace)`) is up, or at
        `until` (a `time.perf_counter()` reading: the evaluation's deadline)."""
        while True:
            left = min(self.left_s(grace), until - time.perf_counter())
            if left <= 0:
                raise TimeoutError
            try:  # a wait on the parent may lengthen the time left meanwhile: look again
                return await asyncio.wait_for(asyncio.shield(self.future), max(left, 0.05))
            except TimeoutError:
                continue

    def python_args(self, args: dict[str, Any], default_s: float) -> dict[str, Any]:
        """`args` of a `tools.python` call with its wall limit (its `timeout`, else
        `default_s`) capped by the problem's time left: the run counts against the problem's
        clock and cannot outlast it. Refused when no time is left."""
        asked = args.get("timeout")
        if not (isinstance(asked, int | float) and asked > 0):  # as the toolbox reads it
            asked = default_s
        left = self.left_s()
        if left <= 0:
            raise ToolInputError("the problem's time is up (Limits.problem_timeout_s): "
                                 "tools.python was not run")
        return {**args, "timeout": min(float(asked), left)}

    def late_text(self, grace: float = 0.0, then: str = "") -> str:
        """Why the parent stopped this run for time: its own limit (`then` says what else
        happened), or, with time left, its evaluation's deadline (`Limits.round_s`)."""
        if self.left_s(grace) > 0:
            return ("wall-clock limit: the evaluation ran past its time (Limits.round_s: its "
                    "problems' Limits.problem_timeout_s and bounded waits added up) before "
                    "this problem finished")
        return (f"wall-clock limit: the problem ran past its {self.timeout:g} s "
                "(Limits.problem_timeout_s, its tools.python runs included; its Solver and "
                f"retriever waits count past {self.wait_s:g} s, Limits.problem_wait_factor x "
                "that)" + then)

    def count_call(self, solver: bool, limits: Limits) -> str | None:
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
