"""The Task protocol: problems, a scorer, a retriever (maybe) and words for the Proposer."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from harness_learning.evals.problem import Problem
from harness_learning.retrieval.protocol import Retriever

Track = Literal["reasoning", "qa"]


@runtime_checkable
class Task(Protocol):
    name: str
    track: Track
    description: str
    """What the Proposer is told about the task: inputs, expected answer form, scoring."""
    seed: str
    """Name of the seed harness (see `harnesses.seeds`)."""

    def dev(self) -> list[Problem]:
        """The pool feedback and selection problems are drawn from."""
        ...

    def test(self) -> list[Problem]:
        """Held out: never seen by the adaptation loop."""
        ...

    def score(self, problem: Problem, answer: str) -> float:
        """0..1. Must never raise on odd answers (return 0.0)."""
        ...

    def retriever(self) -> Retriever | None:
        """What `tools.search` is bound to, or None when the task has no corpus."""
        ...
