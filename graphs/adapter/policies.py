"""Selection policies: which candidate, if any, replaces the current harness.

- `strict` (paper, reasoning track): replace only on a strictly higher selection score.
- `best_valid` (paper, QA track): take the best valid candidate of the round even if it scores
  lower than the current; keep the current only when every candidate failed.
- `racing` is a budget-aware variant of `best_valid`: the `race` node evaluates candidates in
  stages and drops those that cannot win (rule: `graphs.adapter.racing`); the choice is
  `best_valid`'s among the survivors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Scored:
    """A candidate as a policy sees it."""

    sha: str
    valid: bool
    score: float | None
    index: int = 0
    raced_out: bool = False
    """Dropped by a race before its last stage: its score covers fewer problems."""


@dataclass(frozen=True)
class Decision:
    chosen_sha: str
    adopted: bool
    reason: str


def _best(candidates: Sequence[Scored]) -> Scored | None:
    valid = [c for c in candidates if c.valid and c.score is not None]
    # Ties go to the earliest sample, so a decision never depends on completion order.
    return max(valid, key=lambda c: (c.score, -c.index), default=None)


def strict(current: Scored, candidates: Sequence[Scored]) -> Decision:
    best = _best(candidates)
    if best is None:
        return Decision(current.sha, False, "no valid candidate")
    if current.score is None or best.score > current.score:
        return Decision(best.sha, True, f"candidate {best.index} scored {best.score:.3f} > {current.score}")
    return Decision(current.sha, False, f"best candidate {best.score:.3f} <= current {current.score:.3f}")


def best_valid(current: Scored, candidates: Sequence[Scored]) -> Decision:
    best = _best(candidates)
    if best is None:
        return Decision(current.sha, False, "every candidate failed; keeping the current version")
    return Decision(best.sha, True, f"best valid candidate {best.index} scored {best.score:.3f}")


def racing(current: Scored, candidates: Sequence[Scored]) -> Decision:
    """`best_valid` among the race's survivors (a dropped candidate's mean covers fewer
    problems, so it is not comparable with theirs)."""
    decision = best_valid(current, [c for c in candidates if not c.raced_out])
    return Decision(decision.chosen_sha, decision.adopted, f"racing: {decision.reason}")


POLICIES = {"strict": strict, "best_valid": best_valid, "racing": racing}


def decide(policy: str, current: Scored, candidates: Sequence[Scored]) -> Decision:
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    return POLICIES[policy](current, candidates)
