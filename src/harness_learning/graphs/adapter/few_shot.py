"""Few-shot demonstrations for the `few_shot` operator, and the problems a declared list may
hold.

Demonstrations carry their answers into the harness's source, so they must come from problems
that are never scored for selection: only under the held-out split (evals/splits.py), and only
from its feedback side (the dev pool less the run's fixed selection; control problems come
from seeds of their own). The operator takes problems this round's report does not show, so
the memorisation check compares the shown problems as it would without them. The literal
guard exempts a declared `DEMONSTRATIONS` list only when every pair is such a problem with
its own gold (`evals.guards.demonstration_lines`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_learning.evals.problem import Problem, gold_answer
from harness_learning.graphs.adapter.config import AdaptConfig

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.context import PlanningContext

N_DEMONSTRATIONS = 3


def held_out_in_force(cfg: AdaptConfig, pool_size: int) -> bool:
    """The held-out split applies: chosen, and the dev pool holds both sizes."""
    return cfg.split == "held_out" and pool_size >= (cfg.feedback or 0) + (cfg.selection or 0)


def feedback_side(ctx: PlanningContext, selection_ids: list[str]) -> list[Problem]:
    """The dev problems no selection of the run scores, by id; none unless held out."""
    dev = ctx.task.dev()
    if not held_out_in_force(ctx.config, len(dev)):
        return []
    scored = set(selection_ids)
    return sorted((p for p in dev if p.id not in scored), key=lambda p: p.id)


def demonstrations(ctx: PlanningContext, feedback_ids: list[str],
                   selection_ids: list[str]) -> tuple[tuple[str, str], ...]:
    """(question, answer) of the first feedback-side problems this round does not show."""
    shown = set(feedback_ids)
    side = [p for p in feedback_side(ctx, selection_ids) if p.id not in shown]
    return tuple((p.question, gold_answer(p)) for p in side[:N_DEMONSTRATIONS])


def demonstrable(ctx: PlanningContext, selection_ids: list[str]) -> dict[str, list[object]]:
    """Question -> the golds a declared demonstration of it may give."""
    return {p.question: [p.gold, gold_answer(p)] for p in feedback_side(ctx, selection_ids)}
