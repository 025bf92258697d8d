"""One problem's result: the one record that goes from the sandbox through the evaluator to the
execution log and back (docs/ARCHITECTURE.md, "The store").

The sandbox fills in the run (answer or error, trace, cost), the evaluator adds the score, the
store persists it and gives the same record back: there is no second or third shape of it. The
error kinds, and which of them are not the harness's doing (never scored, redone on resume), are
defined here and nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.contract import JUDGE_OP, ToolCall

if TYPE_CHECKING:
    from harness_learning.harnesses.compiler import HarnessInvalid


class ErrorKind(StrEnum):
    """Why a problem has no scored answer. Members are strings, so logs store the plain value."""

    HARNESS = "harness"
    """The harness raised, broke the bridge protocol or returned no answer (scored 0)."""
    TIMEOUT = "timeout"
    """The run passed a wall-clock or CPU-time limit (scored 0; the error says which)."""
    MEMORY = "memory"
    """The harness's processes passed the candidate's memory limit (scored 0)."""
    PIDS = "pids"
    """The harness's processes and threads passed the candidate's process limit (scored 0)."""
    INVALID = "invalid"
    """The source never compiled (scored 0; the candidate is invalid)."""
    INFRA = "infra"
    """A model endpoint or the sandbox itself failed: never scored as a wrong answer."""
    BUDGET = "budget"
    """A spending limit stopped the run (not scored)."""
    METRIC = "metric_error"
    """The harness answered but the task's metric raised (or left [0, 1]) on that answer:
    scored 0 with the answer kept, counted and shown, so a user's metric that fails on an odd
    answer is seen without letting that answer end the run. Only the parent's evaluator sets
    it (the metric runs there)."""

    @classmethod
    def coerce(cls, value: str | None) -> ErrorKind | None:
        """The member for a stored or received value; an unknown kind is the harness's fault
        (a worker must not be able to mark its own failure as infrastructure)."""
        if value is None:
            return None
        try:
            return cls(value)
        except ValueError:
            return cls.HARNESS


class Flag(StrEnum):
    """A mark a check in the parent puts on a scored result. It rides on the trace entry of the
    check's own call (`meta["flag"]` of a `JUDGE_OP` entry), so it survives every store without
    a field of its own; `ProblemResult.flags` reads it back."""

    JUDGE_INJECTION = "judge_injection"
    """The LLM judge passed the answer against a decoy reference too: its grade followed the
    answer's text (an instruction to the judge), so the problem scored 0."""


UNSCORED: frozenset[ErrorKind] = frozenset({ErrorKind.INFRA, ErrorKind.BUDGET})
"""Kinds that are not the harness's doing: no score, not counted in the completed fraction,
redone when a run resumes."""
HARNESS_FAULTS: frozenset[ErrorKind] = frozenset(ErrorKind) - UNSCORED
SANDBOX_FAILED = ("the sandbox did not start", "the sandbox failed")
"""How an infrastructure error begins when the sandbox, not a model endpoint, failed the
problem: the command line then names the backend, not the model."""
"""Kinds that are the harness's doing: scored 0 and shown to the Proposer as errors."""


@dataclass(frozen=True)
class ProblemResult:
    """One problem run by one harness: its answer or why it has none, its score once scored,
    and its trace (the tool calls that crossed the bridge)."""

    problem_id: str = ""
    answer: str | None = None
    score: float | None = None
    """0..1; None until scored, and for ever when the error kind is in UNSCORED."""
    error: str | None = None
    error_kind: ErrorKind | None = None
    traceback: str | None = None
    calls: tuple[ToolCall, ...] = field(default_factory=tuple)
    latency_s: float = 0.0
    tokens: int = 0
    feedback: str | None = None
    """What the task's metric said beside the score (GEPA-style feedback text), shown in the
    Proposer's report; None for metrics that return a bare number."""
    refused_by: str | None = None
    """For an INVALID result, the check that refused the source (`HarnessInvalid.kind`:
    syntax, contract, ...), so the judge reads the kind from here, never from `error`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "error_kind", ErrorKind.coerce(self.error_kind))
        object.__setattr__(self, "calls", tuple(self.calls))

    @property
    def completed(self) -> bool:
        """The harness ran to the end and produced an answer (one its metric failed on too)."""
        return self.error_kind in (None, ErrorKind.METRIC) and self.answer is not None

    @property
    def unscored(self) -> bool:
        return self.error_kind in UNSCORED

    @property
    def trace_bytes_cut(self) -> int:
        """Bytes the parent cut from this trace to keep it within its bounds
        (`harnesses.sandbox.Limits.trace_call_bytes` and the rest). Read from the markers on
        the cut calls (`meta["trace_cut"]`), so it survives the store without a field of its
        own."""
        total = 0
        for call in self.calls:
            cut = call.meta.get("trace_cut") if isinstance(call.meta, dict) else None
            if isinstance(cut, dict) and isinstance(cut.get("bytes"), int):
                total += cut["bytes"]
        return total

    @property
    def flags(self) -> frozenset[Flag]:
        """The parent's checks' marks on this result (see `Flag`), read from its judge calls."""
        marks = {call.meta.get("flag") for call in self.calls
                 if call.tool == JUDGE_OP and isinstance(call.meta, dict)}
        return frozenset(Flag(m) for m in marks if m in Flag._value2member_map_)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the calls become plain dicts (their args and results are JSON values
        already: they crossed the bridge). Shallow, as it runs once per stored problem."""
        data = {name: getattr(self, name) for name in _FIELDS}
        data["calls"] = [{name: getattr(c, name) for name in _CALL_FIELDS} for c in self.calls]
        data["error_kind"] = None if self.error_kind is None else str(self.error_kind)
        return data

    @classmethod
    def refused(cls, exc: HarnessInvalid, problem_id: str = "") -> ProblemResult:
        """The result of a problem whose harness was refused before it could run it."""
        return cls(problem_id, None, 0.0, error=str(exc), error_kind=ErrorKind.INVALID,
                   traceback=exc.traceback, refused_by=exc.kind)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProblemResult:
        """The inverse of `to_dict`; unknown keys are ignored (older logs carried more)."""
        values = {k: v for k, v in data.items() if k in _FIELDS}
        values["calls"] = tuple(calls_from_json(values.get("calls") or ()))
        return cls(**values)


_FIELDS = tuple(f.name for f in dataclasses.fields(ProblemResult))
_CALL_FIELDS = tuple(f.name for f in dataclasses.fields(ToolCall))


def calls_from_json(items: Iterable[object]) -> list[ToolCall]:
    """`ToolCall`s from their JSON form (entries that are not calls are skipped)."""
    out = []
    for item in items:
        if isinstance(item, ToolCall):
            out.append(item)
        elif isinstance(item, dict) and "tool" in item and "args" in item:
            out.append(ToolCall(**{k: v for k, v in item.items() if k in _CALL_FIELDS}))
    return out
