"""Failures of the user's own code in a run, counted apart from the harness's.

A metric that raises on an answer scores that problem 0 as `metric_error`
(`evals.evaluator.to_result`); a user tool that raises reaches the harness as a ToolError and
its traced call is marked `user_tool` (`harnesses.usertools.UserToolError`). Neither ends a
run, and neither may pass silently either: `run`'s table, `show` and the HTML report print one
count and the first message of each, from this summary.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.sandbox.records import USER_TOOL

if TYPE_CHECKING:
    from harness_learning.evals.problem import Problem
    from harness_learning.evals.task import Task

MESSAGE_CHARS = 200
"""Longest first message kept (it is shown on one line)."""


@dataclass(frozen=True)
class UserCodeFailures:
    """How many problems the user's metric failed on and how many user-tool calls raised,
    each with the first message seen."""

    metric_errors: int = 0
    first_metric_error: str | None = None
    tool_errors: int = 0
    first_tool_error: str | None = None

    @classmethod
    def of(cls, results: Iterable[ProblemResult]) -> UserCodeFailures:
        metric, tool = [], []
        for r in results:
            if r.error_kind == ErrorKind.METRIC:
                metric.append(r.error or "the metric failed")
            tool += [c.error for c in r.calls
                     if c.error and isinstance(c.meta, dict) and c.meta.get("kind") == USER_TOOL]
        return cls(len(metric), _first(metric), len(tool), _first(tool))

    def __bool__(self) -> bool:
        return bool(self.metric_errors or self.tool_errors)

    def lines(self) -> list[str]:
        """One line per kind that happened, e.g. `metric errors: 3 problems scored 0 (first:
        ...)`; [] when the user's code never failed."""
        out = []
        if self.metric_errors:
            out.append(f"metric errors: {self.metric_errors} problem"
                       f"{'s' if self.metric_errors != 1 else ''} scored 0 because your metric "
                       f"failed on the answer (first: {self.first_metric_error})")
        if self.tool_errors:
            out.append(f"tool errors: {self.tool_errors} call"
                       f"{'s' if self.tool_errors != 1 else ''} to your tools raised "
                       f"(first: {self.first_tool_error})")
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UserCodeFailures:
        """The summary back from `to_json`'s keys in a larger dict (absent keys: none)."""
        return cls(int(data.get("metric_errors") or 0), data.get("first_metric_error"),
                   int(data.get("tool_errors") or 0), data.get("first_tool_error"))

    def to_json(self) -> dict[str, Any]:
        return {"metric_errors": self.metric_errors,
                "first_metric_error": self.first_metric_error,
                "tool_errors": self.tool_errors, "first_tool_error": self.first_tool_error}


def _first(messages: list[str]) -> str | None:
    if not messages:
        return None
    text = " ".join(messages[0].split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def check_metric(task: Task, problems: list[Problem] | None = None) -> None:
    """Before anything is scored: a task of one's own checks its metric on the gold answers
    (`DataTask.check_metric`, raising one clear error); built-in tasks have nothing to check."""
    check = getattr(task, "check_metric", None)
    if check is not None:
        check(problems)
