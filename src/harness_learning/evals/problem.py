"""A problem: public inputs for the harness, private gold for the scorer."""

from __future__ import annotations

import json
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


def gold_answer(problem: Problem) -> str:
    """The gold answer as a feedback report shows it: the task's `meta["answer"]` where it put
    one (reasoning-gym's gold is its generator's whole record, which no report quotes), else the
    gold, as text."""
    answer = (problem.meta or {}).get("answer", problem.gold)
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, default=str)


def gold_text(problem: Problem) -> str:
    """`gold_answer` with the other answers the scorer accepts, as a report's `Gold:` line."""
    answer = gold_answer(problem)
    aliases = [a for a in (problem.meta or {}).get("aliases") or [] if a != answer]
    return answer + (f" (also accepted: {'; '.join(map(str, aliases))})" if aliases else "")


def shown_golds(problem: Problem) -> list[Any]:
    """Each gold answer `gold_text` can show of `problem`, one value each, for the guards that
    look for them in a report or a program: the shown answer and its aliases, or each alias of a
    gold that is a list of them."""
    meta = problem.meta or {}
    if "answer" in meta:
        return [meta["answer"], *(meta.get("aliases") or [])]
    return list(problem.gold) if isinstance(problem.gold, list | tuple) else [problem.gold]
