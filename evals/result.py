"""What an evaluation returns: per-problem results, streamed, and their summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness_learning.harnesses.contract import ToolCall

ErrorKind = Literal["harness", "timeout", "infra", "invalid", "budget"]
"""`harness`: the harness raised or returned no answer (scored 0). `timeout`: it ran past its
wall-clock limit (scored 0). `infra`: a model endpoint or the sandbox itself failed: never scored
as a wrong answer, counted apart. `invalid`: the source never compiled. `budget`: stopped by a
spending limit (not scored)."""

UNSCORED: frozenset[str] = frozenset({"infra", "budget"})


@dataclass
class ProblemResult:
    problem_id: str
    answer: str | None
    score: float | None
    """0..1, or None when the problem was not scored (infra error or budget stop)."""
    error: str | None = None
    error_kind: ErrorKind | None = None
    traceback: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    latency_s: float = 0.0
    tokens: int = 0

    @property
    def completed(self) -> bool:
        """The harness ran to the end and produced an answer."""
        return self.error_kind is None and self.answer is not None


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
        return sum(r.error_kind == "infra" for r in self.results)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.results)
