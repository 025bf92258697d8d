"""What an evaluation returns: per-problem results, streamed, and their summary.

The per-problem record and the error kinds are `harnesses.results` (the sandbox fills the record,
the evaluator scores it, the store keeps it); this module summarises a list of them."""

from __future__ import annotations

from dataclasses import dataclass

from harness_learning.harnesses.results import UNSCORED, ErrorKind, ProblemResult

__all__ = ["UNSCORED", "ErrorKind", "EvalResult", "Graded", "ProblemResult"]


class Graded(float):
    """A score with the metric's feedback text beside it (GEPA-style): a task's `score` may
    return one instead of a bare float, and the report shows the text to the Proposer."""

    feedback: str

    def __new__(cls, score: float, feedback: str) -> Graded:
        graded = super().__new__(cls, score)
        graded.feedback = feedback
        return graded


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
