"""The parent's record of one problem in flight on a sandbox worker (client.py serves it)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from harness_learning.harnesses.contract import ToolCall


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
