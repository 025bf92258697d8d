"""The behavioural hard-coding check, run by the judge (evals/judge.py) on every candidate that
passed its evaluation, whoever judges it: the adapter's candidate and race nodes and online
GRPO's reward.

Literals are easy to hide (golds stored shifted, keyed by a hash of the question); what hiding
cannot change is behaviour. An `Exposure` says what the feedback report showed the Proposer: the
problems whose gold it showed and where comparable problems no report shows come from (the task's
`control(n)`, where it has one). `memorisation_check` compares the candidate's scores on the
shown problems with its scores on unseen ones (`guards.memorisation_reason`), evaluating through
the caller's `probe` whatever the selection did not already run: the shown problems outside the
selection and, where the selection holds too few unseen problems (the reasoning track's protocol
evaluates selection on the feedback problems themselves), control problems.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness_learning.evals.guards import memorisation_reason, shown_problems
from harness_learning.evals.problem import Problem, shown_golds
from harness_learning.evals.result import EvalResult

PROBE = "probe"
"""The purpose under which a caller that logs results stores the check's own evaluations."""
MIN_UNSEEN = 8
MAX_CONTROL = 25

Probe = Callable[[list[Problem]], Awaitable[EvalResult]]
"""Evaluates the candidate being judged on the given problems (in the sandbox)."""
Control = Callable[[int], Sequence[Problem]]


@dataclass(frozen=True)
class Exposure:
    """What the feedback report showed the Proposer, for both reward-hacking guards: the problems
    whose gold it showed (the literal guard reads their golds, the behaviour check their scores)
    and the task's source of comparable unseen problems. `parent` holds the parent's scores by
    problem id, where known, for the per-problem comparison. `Exposure()` showed nothing: both
    guards pass."""

    shown: tuple[Problem, ...] = ()
    control: Control | None = None
    parent: Mapping[str, float | None] = field(default_factory=dict)
    parent_probe: Probe | None = None
    """Evaluates the parent where `parent` lacks its scores (the control problems)."""
    demonstrable: Mapping[str, object] = field(default_factory=dict)
    """Question -> gold of the problems a declared demonstration may be (the literal guard
    exempts it): the run's feedback side under the held-out split, else nothing."""

    @classmethod
    def of(cls, problems: Iterable[Problem], report: str, task: object = None,
           parent: Mapping[str, float | None] | None = None,
           parent_probe: Probe | None = None,
           demonstrable: Mapping[str, object] | None = None) -> Exposure:
        """The `problems` whose gold `report` showed (each once), with `task.control` if any,
        the parent's scores and the problems demonstrations may come from."""
        unique = {p.id: p for p in shown_problems(problems, report)}
        control = getattr(task, "control", None)
        return cls(tuple(unique.values()), control if callable(control) else None,
                   dict(parent or {}), parent_probe, dict(demonstrable or {}))

    @property
    def golds(self) -> list[object]:
        """The gold answers shown, as the report showed them (`evals.problem.shown_golds`)."""
        return [gold for p in self.shown for gold in shown_golds(p)]


async def memorisation_check(selection: EvalResult, exposure: Exposure,
                             probe: Probe) -> str | None:
    """The reason the candidate looks memorised (`"reward_hacking: memorised ..."`), or None,
    also when nothing compares. `selection` is its evaluation so far; `probe` runs the rest."""
    if not exposure.shown:
        return None
    shown_ids = {p.id for p in exposure.shown}
    selected = {r.problem_id: r.score for r in selection.results}
    scores = dict(selected)
    missing = [p for p in exposure.shown if p.id not in scores]
    if missing:
        scores.update({r.problem_id: r.score for r in (await probe(missing)).results})
    shown_ids_in_order = [p.id for p in exposure.shown]
    unseen = {pid: s for pid, s in selected.items() if pid not in shown_ids}
    parent = dict(exposure.parent)
    if len(unseen) < MIN_UNSEEN and exposure.control is not None:
        wanted = min(max(len(exposure.shown), MIN_UNSEEN), MAX_CONTROL)
        extra = [p for p in exposure.control(wanted) if p.id not in shown_ids]
        if extra:
            unseen.update({r.problem_id: r.score for r in (await probe(extra)).results})
            if exposure.parent_probe is not None:  # once per parent: its probes are logged
                parent.update({r.problem_id: r.score
                               for r in (await exposure.parent_probe(extra)).results})
    shown_scores = [scores.get(pid) for pid in shown_ids_in_order]
    known = all(pid in parent for pid in shown_ids_in_order) and \
        sum(pid in parent for pid in unseen) >= MIN_UNSEEN
    if not known:
        return memorisation_reason(shown_scores, list(unseen.values()))
    paired = [pid for pid in unseen if pid in parent]
    return memorisation_reason(
        shown_scores, [unseen[pid] for pid in paired],
        parent_shown=[parent[pid] for pid in shown_ids_in_order],
        parent_unseen=[parent[pid] for pid in paired])
