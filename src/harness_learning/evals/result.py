"""What an evaluation returns: per-problem results, streamed, and their summary.

The per-problem record and the error kinds are `harnesses.results` (the sandbox fills the record,
the evaluator scores it, the store keeps it); this module summarises a list of them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import UNSCORED, ErrorKind, ProblemResult

__all__ = ["UNSCORED", "ErrorKind", "EvalResult", "Graded", "ProblemResult", "with_metric_calls"]


class Graded(float):
    """A score with the metric's feedback text beside it (GEPA-style): a task's `score` may
    return one instead of a bare float, and the report shows the text to the Proposer. A metric
    that calls a model (the LLM judge) also hands back those calls, for the problem's trace:
    `with_metric_calls` adds them there, where every budget counts them."""

    feedback: str | None
    calls: tuple[ToolCall, ...]

    def __new__(cls, score: float, feedback: str | None,
                calls: tuple[ToolCall, ...] = ()) -> Graded:
        graded = super().__new__(cls, score)
        graded.feedback = feedback
        graded.calls = tuple(calls)
        return graded


def with_metric_calls(result: ProblemResult, value: object) -> ProblemResult:
    """`result` with the model calls its metric made (a `Graded` value's `calls`) appended to
    its trace and their tokens to its own: the same ledger the Solver's calls are on."""
    calls = getattr(value, "calls", ()) if isinstance(value, Graded) else ()
    if not calls:
        return result
    return replace(result, calls=(*result.calls, *calls),
                   tokens=result.tokens + sum(c.tokens for c in calls))


@dataclass
class EvalResult:
    results: list[ProblemResult]

    @property
    def scored(self) -> list[ProblemResult]:
        return [r for r in self.results if r.score is not None]

    @property
    def mean_score(self) -> float:
        scored = self.scored
        return sum(r.score for r in scored) / len(scored) if scored else 0.0

    @property
    def completed_fraction(self) -> float:
        counted = [r for r in self.results if r.error_kind not in UNSCORED]
        return sum(r.completed for r in counted) / len(counted) if counted else 0.0

    @property
    def infra_errors(self) -> int:
        return sum(r.error_kind == ErrorKind.INFRA for r in self.results)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.results)
