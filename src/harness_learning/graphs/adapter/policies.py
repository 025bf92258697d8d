"""Selection policies: which candidate, if any, replaces the current harness.

- `strict` (paper, reasoning track): replace only on a strictly higher selection score.
- `best_valid` (paper, QA track): take the best valid candidate of the round even if it scores
  lower than the current; keep the current only when every candidate failed.
- `racing` is a budget-aware variant of `best_valid`: the `race` node evaluates candidates in
  stages and drops those that cannot win (rule: `graphs.adapter.racing`); the choice is
  `best_valid`'s among the survivors.
- `pareto` (GEPA's parent selection): the next round's parent is drawn from the Pareto front of
  every version scored on the round's selection problems so far (each best on some problem),
  weighted by how many problems it leads, so a version that solves what the others miss is
  revisited even when its mean is lower. It needs the `archive` of per-problem scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    score: float | None = None
    """The chosen version's selection score when it is not one of this round's candidates."""


Archive = Mapping[str, Mapping[str, float]]
"""Version sha -> selection problem id -> score, for every valid version scored on them."""


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


def pareto_front(archive: Archive) -> dict[str, int]:
    """GEPA's frontier: per problem, the versions with its best score (problems nobody solves
    carry no information and are skipped); versions dominated by another (no better anywhere,
    worse somewhere) are removed. Each front version with the number of problems it leads,
    in the archive's order."""
    problems = sorted({pid for scores in archive.values() for pid in scores})
    leads: dict[str, int] = {}
    for pid in problems:
        best = max(scores.get(pid, 0.0) for scores in archive.values())
        if best <= 0:
            continue
        for sha, scores in archive.items():
            if scores.get(pid, 0.0) == best:
                leads[sha] = leads.get(sha, 0) + 1

    def dominated(a: str) -> bool:
        return any(b != a and all(archive[b].get(p, 0.0) >= archive[a].get(p, 0.0) for p in problems)
                   and any(archive[b].get(p, 0.0) > archive[a].get(p, 0.0) for p in problems)
                   for b in leads)

    return {sha: leads[sha] for sha in archive if sha in leads and not dominated(sha)}


def pareto(current: Scored, candidates: Sequence[Scored], archive: Archive | None = None,
           draw: float = 0.0) -> Decision:
    """The next parent drawn from the Pareto front of `archive` (the current version and
    every valid candidate so far, this round's included), with probability proportional to the
    problems it leads; `draw` in [0, 1) is the caller's seeded random number. Without an
    archive or a front (nothing solved anywhere), it is `best_valid`."""
    front = pareto_front(archive or {})
    if not front:
        decision = best_valid(current, candidates)
        return Decision(decision.chosen_sha, decision.adopted, f"pareto (no front): {decision.reason}")
    total = sum(front.values())
    point, chosen = draw * total, next(iter(front))
    for sha, count in front.items():
        if point < count:
            chosen = sha
            break
        point -= count
    scores = (archive or {})[chosen]
    mean = sum(scores.values()) / len(scores) if scores else 0.0
    return Decision(chosen, chosen != current.sha,
                    f"pareto: drew {chosen[:12]} from a front of {len(front)} "
                    f"(it leads {front[chosen]} of {total} problem-wins; mean {mean:.3f})", mean)


POLICIES = {"strict": strict, "best_valid": best_valid, "racing": racing, "pareto": pareto}


def decide(policy: str, current: Scored, candidates: Sequence[Scored],
           archive: Archive | None = None, draw: float = 0.0) -> Decision:
    """The policy's decision; only `pareto` reads the archive and the draw."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    if policy == "pareto":
        return pareto(current, candidates, archive, draw)
    return POLICIES[policy](current, candidates)
