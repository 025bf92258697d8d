"""What crosses between the parent's tools and a worker's runs: tool replies, how a toolbox's
failure is classified, and the capped capture of a process's output. A run's outcome is a
`harnesses.results.ProblemResult` (the one per-problem record)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness_learning.harnesses.results import ErrorKind


@dataclass
class ToolReply:
    """What a toolbox returns for one call: a JSON-able result and what to record about it."""

    result: Any
    tokens: int = 0
    cached: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


class ToolHandler(Protocol):
    """The parent-side implementation of the tools (see `harnesses.toolbox.Toolbox`)."""

    async def call(self, tool: str, args: dict[str, Any]) -> ToolReply: ...


def failure_kind(exc: BaseException) -> str:
    """`infra`, `budget` or `tool` for an exception a toolbox raised. Matched by class name
    so the sandbox needs no import of the model layer."""
    names = {c.__name__ for c in type(exc).__mro__}
    if "InfraError" in names:
        return ErrorKind.BUDGET if getattr(exc, "kind", None) == "budget" else ErrorKind.INFRA
    if "BudgetExceeded" in names:
        return ErrorKind.BUDGET
    return "tool"


class CappedOutput:
    """The last `cap` bytes of a stream, and how many bytes it carried in all."""

    def __init__(self, cap: int) -> None:
        self.cap, self.total, self.data = cap, 0, bytearray()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > self.cap:
            del self.data[: len(self.data) - self.cap]

    def text(self) -> str:
        dropped = self.total - len(self.data)
        head = f"[{dropped} earlier bytes dropped]\n" if dropped else ""
        return head + self.data.decode("utf-8", "replace")
