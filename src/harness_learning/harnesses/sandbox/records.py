"""What crosses between the parent's tools and a worker's runs: tool replies, how a toolbox's
failure is classified, and the capped capture of a process's output. A run's outcome is a
`harnesses.results.ProblemResult` (the one per-problem record)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import UNSCORED, ErrorKind, ProblemResult

if TYPE_CHECKING:
    import asyncio


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


USER_TOOL = "user_tool"
"""`meta["kind"]` of a traced call whose user tool itself raised (`UserToolError`): the user's
code failed, not the harness's call; counted and shown apart (`evals.user_failures`)."""


def failure_kind(exc: BaseException) -> str:
    """`infra`, `budget`, `user_tool` or `tool` for an exception a toolbox raised. Matched by
    class name so the sandbox needs no import of the model layer or of the user tools."""
    names = {c.__name__ for c in type(exc).__mro__}
    if "InfraError" in names:
        return ErrorKind.BUDGET if getattr(exc, "kind", None) == "budget" else ErrorKind.INFRA
    return USER_TOOL if "UserToolError" in names else "tool"


WORKER_KINDS = frozenset(ErrorKind) - {ErrorKind.INVALID, ErrorKind.METRIC}
"""The error kinds a worker's result may carry (only the parent's check declares a source
invalid, only its metric fails on an answer); any other value is the harness's fault."""


@dataclass(frozen=True)
class Verdict:
    """How the parent itself ended a run (a kill, a cap, a closed worker). A worker's message
    is a dict decoded from JSON and can never be one of these."""

    kind: str
    error: str


def judged_outcome(problem_id: str, message: dict[str, Any] | Verdict, calls: list[ToolCall],
                   latency_s: float) -> ProblemResult:
    """A run's result from the parent's verdict, or from the worker's message checked against
    the parent's own trace `calls`: a worker may *claim* "infra" or "budget" (raising the
    sandbox's own exception, forging a message), but the problem is unscored only where a
    call of that kind failed in the parent; otherwise it is the harness's fault."""
    answer, traceback = None, None
    if isinstance(message, Verdict):
        kind, error = ErrorKind.coerce(message.kind), message.error
    else:
        raw = message.get("answer")
        answer = raw if isinstance(raw, str) else None
        kind = message.get("error_kind")
        if kind is None and answer is None:
            kind = ErrorKind.HARNESS
        elif kind is not None:
            kind = ErrorKind(kind) if kind in WORKER_KINDS else ErrorKind.HARNESS
        error, traceback = _text(message.get("error")), _text(message.get("traceback"))
        if kind in UNSCORED:
            seen = next((c.meta.get("kind") for c in calls
                         if c.error and c.meta.get("kind") in UNSCORED), None)
            if seen is None:
                kind = ErrorKind.HARNESS
                error = ("the harness reported an infrastructure failure the parent never saw "
                         f"(no failed call of that kind): {error}")
            else:
                kind = ErrorKind(seen)
    if kind is not None and error is None:
        error = "the run finished without an answer"
    return ProblemResult(problem_id, answer=answer, error=error, error_kind=kind,
                         traceback=traceback, calls=tuple(calls), latency_s=latency_s,
                         tokens=sum(c.tokens for c in calls))


def _text(value: object) -> str | None:
    return None if value is None else str(value)


class CappedOutput:
    """The last `cap` bytes of a stream, and how many bytes it carried in all."""

    def __init__(self, cap: int) -> None:
        self.cap, self.total, self.data = cap, 0, bytearray()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > self.cap:
            del self.data[: len(self.data) - self.cap]

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        """Read an asyncio stream to its end into this buffer (nothing for None)."""
        if stream is None:
            return
        while chunk := await stream.read(65536):
            self.add(chunk)

    def text(self) -> str:
        dropped = self.total - len(self.data)
        head = f"[{dropped} earlier bytes dropped]\n" if dropped else ""
        return head + self.data.decode("utf-8", "replace")
