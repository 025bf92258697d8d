"""Where the adapter runs the memorisation check (`guards.memorisation_reason`) on a candidate.

Self-contained so the candidate judge can call it wherever a candidate's selection result is
known: `await memorisation_probe(ctx, sha, payload, result, evaluate_cached)` returns the
reason to flag the candidate, or None.

Shown problems are the round's feedback problems whose gold the report showed; unseen ones are
the selection problems outside them (QA: all of them) and, where those are too few (the
reasoning track's protocol evaluates selection on the feedback problems themselves), the task's
control problems (`task.control(n)`, comparable problems no report shows). Results on problems
the candidate has not run yet are evaluated and logged under purpose "probe".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from harness_learning.evals.guards import memorisation_reason, shown_problems
from harness_learning.evals.result import EvalResult

PROBE = "probe"
MIN_UNSEEN = 8
MAX_CONTROL = 25

Evaluate = Callable[..., Awaitable[EvalResult]]


async def memorisation_probe(ctx: Any, sha: str, payload: dict, selection: EvalResult,
                             evaluate: Evaluate) -> str | None:
    """The reason the candidate `sha` looks memorised, or None (also when nothing compares)."""
    round_ = payload["round"]
    shown = shown_problems(ctx.dev_problems(payload.get("feedback_ids", [])), payload["report"])
    if not shown:
        return None
    shown_ids = {p.id for p in shown}
    scores = {r.problem_id: r.score for r in selection.results}
    missing = [p for p in shown if p.id not in scores]
    if missing:
        probed = await evaluate(ctx, sha, missing, PROBE, round_)
        scores.update({r.problem_id: r.score for r in probed.results})
    shown_scores = [scores.get(i) for i in shown_ids]
    unseen = [s for pid, s in scores.items() if pid not in shown_ids
              and pid in {r.problem_id for r in selection.results}]
    control = getattr(ctx.task, "control", None)
    if len(unseen) < MIN_UNSEEN and callable(control):
        extra = control(min(max(len(shown), MIN_UNSEEN), MAX_CONTROL))
        if extra:
            probed = await evaluate(ctx, sha, extra, PROBE, round_)
            unseen += [r.score for r in probed.results]
    return memorisation_reason(shown_scores, unseen)
