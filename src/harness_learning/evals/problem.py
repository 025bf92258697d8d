"""A problem: public inputs for the harness, private gold for the scorer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One labelled problem.

    `inputs` is all a harness may see (it becomes the graph's input state and always holds
    `question`). `gold` and `meta` stay in the parent: gold answers of selection and test problems
    never enter a sandbox worker. `meta` holds what a feedback report may show (e.g. gold
    supporting titles for QA) and what the scorer needs (aliases).
    """

    id: str
    inputs: dict[str, Any]
    gold: Any
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str:
        return str(self.inputs["question"])
