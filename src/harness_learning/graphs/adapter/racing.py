"""Racing: evaluate a round's candidates in stages and stop those that cannot win.

Full evaluation (`best_valid`) runs every valid candidate on every selection problem. Racing
runs them on the same problems in the same order (paired) in stages of growing size, and after
each stage drops candidates, so the Solver calls go to the ones still in contention:

1. stages are cumulative prefixes of the round's selection problems (already in a random order):
   by default 5/16, 3/4 and all of them (20, 48, 64 for the QA track's 64);
2. after a stage, on the problems every live candidate has now run, the leader is the best mean
   (ties to the earliest sample); a candidate whose paired deficit to the leader is larger than
   `z` standard errors of the paired differences cannot catch up and is dropped ("early stop");
3. of the candidates that entered the stage, at most a fraction `keep` (rounded up) go on: by
   default half after the first stage and 3/4 after the second, so 8 candidates race as
   "keep 4 then 3" (20:4 48:3 64);
4. the race ends when one candidate is left or the last stage is run; the winner is the best
   survivor. A candidate left alone before the last stage (a lone entrant, or the last one
   standing) runs the rest of the pool, so the selection score it is adopted with is over every
   problem, comparable with full evaluation's: a mean over the first stage's few problems would
   win `adapt`'s pick of the best version by luck. A dropped candidate keeps the mean of the
   problems it ran as its selection score, but only survivors can be chosen
   (`Standing.raced_out`).

The rule is pure (`RaceRule.step`), so the adapter's node and the policy simulation in
`harness_learning_lab.bench.racing` share it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

K = TypeVar("K", bound=Hashable)


class RaceRule(BaseModel):
    """The schedule and the stopping rule of a race (a run's `race` setting: a JSON object or a
    TOML table of these keys; an unknown key is refused)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    fractions: tuple[float, ...] = (0.3125, 0.75, 1.0)
    """Cumulative fractions of the problems run by the end of each stage; the last must be 1.
    A first stage of 1/8 spends 4x fewer calls than full evaluation but picks the best
    candidate markedly less often (`harness-learn bench racing`)."""
    z: float = Field(1.64, ge=0)
    """A candidate behind the leader by more than z standard errors (paired) is dropped."""
    keep: tuple[float, ...] | None = (0.5, 0.75)
    """Of the candidates that entered a stage, at most this fraction (rounded up) go on: entry i
    after stage i, the last entry after any later stage; None keeps all (the z-test alone).
    The default ("keep 4 then 3") spends about 1.6x fewer calls than full evaluation at >= 0.96
    of its P(best) in every simulated scenario; successive halving, `keep=(0.5,)` with
    fractions (0.25, 0.5, 1), saves 2x but picks the best less often in near ties
    (`harness-learn bench racing --curve`)."""
    min_stage: int = Field(4, ge=1)
    """No stage ends before this many problems (tiny pools are raced in fewer stages)."""

    @model_validator(mode="after")
    def _schedule(self) -> RaceRule:
        """The stages rise to the whole pool, and each `keep` is a fraction."""
        f = self.fractions
        if not f or any(b <= a for a, b in zip(f, f[1:], strict=False)) or f[-1] != 1.0 or f[0] <= 0:
            raise ValueError(f"RaceRule.fractions must rise strictly to 1.0, got {f}")
        if self.keep is not None and (not self.keep or any(not 0 < k <= 1 for k in self.keep)):
            raise ValueError(f"RaceRule.keep must be None or fractions in (0, 1], got {self.keep}")
        return self

    @classmethod
    def from_dict(cls, values: dict) -> RaceRule:
        """A rule from its JSON form (lists for tuples); unknown keys are an error."""
        known = set(cls.model_fields)
        if unknown := set(values) - known:
            raise ValueError(f"unknown race rule keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**values)

    def survivors(self, stage: int, entered: int) -> int:
        """At most how many of the `entered` candidates go on after stage `stage` (from 0)."""
        if self.keep is None:
            return entered
        return math.ceil(self.keep[min(stage, len(self.keep) - 1)] * entered)

    def max_problems(self, candidates: int, n: int) -> int:
        """Problems a race of `candidates` over a pool of `n` runs at most (no early stop)."""
        spent, live, start = 0, candidates, 0
        for stage, end in enumerate(self.stage_ends(n)):
            spent += live * (end - start)
            start = end
            live = self.survivors(stage, live)
            if live <= 1:  # the race is over, and its survivor runs the rest, as in `race`
                spent += live * (n - start)
                break
        return spent

    def stage_ends(self, n: int) -> list[int]:
        """How many problems have run at the end of each stage, for a pool of `n`."""
        ends: list[int] = []
        for fraction in self.fractions:
            end = min(n, max(self.min_stage, math.ceil(fraction * n)))
            if not ends or end > ends[-1]:
                ends.append(end)
        return ends

    def step(self, scores: dict[K, Sequence[float]], order: Sequence[K],
             stage: int = 0) -> dict[K, str]:
        """Which of the live candidates to drop after stage `stage` (from 0), with the reason of
        each.

        `scores[k]` holds candidate k's scores on the problems run so far (same problems, same
        order for every k); `order` ranks the candidates for ties (earlier wins)."""
        rank = {k: i for i, k in enumerate(order)}
        means = {k: sum(v) / len(v) for k, v in scores.items()}
        ranked = sorted(scores, key=lambda k: (-means[k], rank[k]))
        leader = ranked[0]
        dropped: dict[K, str] = {}
        for k in ranked[1:]:
            gap, se = paired_gap(scores[leader], scores[k])
            if gap > 0 and gap > self.z * se:
                dropped[k] = (f"behind the leader by {gap:.3f} (> {self.z:g} x {se:.3f} s.e.) "
                              f"after {len(scores[k])} problems")
        cap = self.survivors(stage, len(ranked))
        for k in ranked[cap:]:
            dropped.setdefault(k, f"not among the best {cap} of {len(ranked)} after "
                                  f"{len(scores[k])} problems (mean {means[k]:.3f})")
        return dropped


def paired_gap(leader: Sequence[float], other: Sequence[float]) -> tuple[float, float]:
    """Mean of (leader - other) over paired problems and its standard error. The error is
    at least that of a fair coin's (0.5 / sqrt(m)): a few identical differences are no proof."""
    diffs = [a - b for a, b in zip(leader, other, strict=True)]
    m = len(diffs)
    mean = sum(diffs) / m
    if m < 2:
        return mean, math.inf
    var = sum((d - mean) ** 2 for d in diffs) / (m - 1)
    return mean, max(math.sqrt(var / m), 0.5 / math.sqrt(m))


@dataclass
class Standing(Generic[K]):
    """One candidate's race: its scores so far and, if dropped, when and why."""

    key: K
    scores: list[float] = field(default_factory=list)
    raced_out: bool = False
    reason: str | None = None

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0


@dataclass
class RaceResult(Generic[K]):
    standings: dict[K, Standing[K]]
    stages: list[dict]
    """Per stage: problems run by its end and the candidates live after it."""

    @property
    def winner(self) -> K | None:
        live = [s for s in self.standings.values() if not s.raced_out]
        order = list(self.standings)
        best = max(live, key=lambda s: (s.mean, -order.index(s.key)), default=None)
        return None if best is None else best.key

    @property
    def problems_run(self) -> int:
        return sum(len(s.scores) for s in self.standings.values())


RunSlice = Callable[[K, int, int], Awaitable[Sequence[float]]]
"""`run(key, start, end)`: the candidate's scores on problems [start, end) of the pool, in order."""


async def race(keys: Sequence[K], n_problems: int, run: RunSlice[K],
               rule: RaceRule | None = None) -> RaceResult[K]:
    """Race `keys` over a pool of `n_problems`; the live candidates of a stage run concurrently."""
    rule = rule or RaceRule()
    standings = {k: Standing(k) for k in keys}
    stages: list[dict] = []
    live = list(keys)
    start = 0

    async def extend(key: K, start: int, end: int) -> None:
        got = await run(key, start, end)
        if len(got) != end - start:
            raise ValueError(f"candidate {key!r}: {len(got)} scores for problems {start}..{end}")
        standings[key].scores.extend(float(s) for s in got)

    for stage, end in enumerate(rule.stage_ends(n_problems) if live else []):
        await asyncio.gather(*(extend(k, start, end) for k in live))
        start = end
        if end < n_problems and len(live) > 1:
            dropped = rule.step({k: standings[k].scores for k in live}, keys, stage)
            for k, why in dropped.items():
                standings[k].raced_out, standings[k].reason = True, why
            live = [k for k in live if k not in dropped]
        stages.append({"problems": end, "live": list(live)})
        if len(live) <= 1:
            break
    if len(live) == 1 and start < n_problems:  # the survivor's score covers the whole pool
        await extend(live[0], start, n_problems)
        stages.append({"problems": n_problems, "live": list(live)})
    return RaceResult(standings, stages)
