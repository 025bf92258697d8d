"""How good can any staged race be at a given call saving? A sweep of schedules.

`harness-learn bench racing` measures our rule. This asks the question behind its targets: over
many staged elimination schedules (run all live candidates to problem e1, keep the best k1, run
those to e2, keep k2, ..., choose the best mean at the end), which one picks the truly best
candidate most often in the *worst* scenario while spending at least `min_ratio` times fewer
Solver calls than full evaluation? Outcomes come from the same simulation as the racing bench
(`harness_learning_lab.bench.racing.outcomes`), drawn once per scenario and shared by every schedule (common
random numbers), so schedules are compared on identical rounds. Vectorised over rounds.

A schedule is a list of (end, keep) stages and a final end: ((16, 4), (32, 2)), 64 means 8
candidates on 16 problems, the best 4 to problem 32, the best 2 to problem 64.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from harness_learning_lab.bench.racing import SCENARIOS, outcomes

Schedule = tuple[tuple[tuple[int, int], ...], int]


def draw(seeds: int, candidates: int, problems: int, rho: float, seed: int) -> dict:
    """Per scenario: cumulative outcome sums (rounds x candidates x problems+1), the truly best
    candidate of each round, and full evaluation's P(best) on the first `problems`."""
    rounds = {}
    for name, scenario in SCENARIOS.items():
        rng = np.random.default_rng(seed)
        p = np.stack([scenario(rng) for _ in range(seeds)])[:, :candidates]
        o = np.stack([outcomes(rng, row, problems, rho) for row in p])
        sums = np.concatenate([np.zeros((seeds, candidates, 1)), np.cumsum(o, axis=2)], axis=2)
        best = p.argmax(axis=1)
        full = best_mean(sums[:, :, problems] / problems)
        rounds[name] = (sums, best, float((full == best).mean()))
    return rounds


def best_mean(means: np.ndarray) -> np.ndarray:
    """Best mean per round; ties to the earliest candidate (as `full_choice` and the race do)."""
    return (means - 1e-9 * np.arange(means.shape[1])).argmax(axis=1)


def stage_costs(schedule: Schedule, candidates: int) -> list[int]:
    """Problems run in each stage of a schedule (all of a stage's problems run at once)."""
    stages, final = schedule
    spent, live, start = [], candidates, 0
    for end, keep in (*stages, (final, None)):
        spent.append(live * (end - start))
        start, live = end, keep or live
    return spent


def cost(schedule: Schedule, candidates: int) -> int:
    """Problems run by a schedule (its Solver calls / calls per problem)."""
    return sum(stage_costs(schedule, candidates))


def choices(schedule: Schedule, sums: np.ndarray) -> np.ndarray:
    """The candidate a schedule picks in each round (`sums`: rounds x candidates x problems+1)."""
    stages, final = schedule
    n, k = sums.shape[:2]
    live = np.ones((n, k), dtype=bool)
    for end, keep in stages:
        means = np.where(live, sums[:, :, end] / end - 1e-9 * np.arange(k), -np.inf)
        rank = np.argsort(np.argsort(-means, axis=1, kind="stable"), axis=1)
        live &= rank < keep
    return best_mean(np.where(live, sums[:, :, final] / final, -np.inf))


def quality(schedule: Schedule, rounds: dict) -> dict[str, float]:
    """Per scenario: P(schedule picks the best) / P(full evaluation picks the best)."""
    return {name: float((choices(schedule, sums) == best).mean()) / max(p_full, 1e-9)
            for name, (sums, best, p_full) in rounds.items()}


def schedules(candidates: int, problems: int, step: int = 4) -> Iterator[Schedule]:
    """One- and two-cut schedules on a grid of `step` problems, final stage at `problems`."""
    ends = range(step, problems, step)
    for e1, k1 in itertools.product(ends, range(2, candidates)):
        yield ((e1, k1),), problems
        for e2, k2 in itertools.product((e for e in ends if e > e1), range(2, k1)):
            yield ((e1, k1), (e2, k2)), problems


def sweep(min_ratio: float = 2.0, seeds: int = 4000, candidates: int = 8, problems: int = 64,
          rho: float = 0.5, seed: int = 7, top: int = 5) -> dict:
    """The `top` schedules by worst-scenario quality among those saving >= `min_ratio`."""
    rounds = draw(seeds, candidates, problems, rho, seed)
    full = candidates * problems
    found = []
    for s in schedules(candidates, problems):
        ratio = full / cost(s, candidates)
        if ratio >= min_ratio:
            q = quality(s, rounds)
            found.append({"stages": [list(x) for x in s[0]], "final": s[1], "call_ratio": ratio,
                          "worst_quality": min(q.values()), "quality": q})
    found.sort(key=lambda r: -r["worst_quality"])
    return {"min_ratio": min_ratio, "seeds": seeds, "rho": rho, "searched": len(found),
            "p_best_full": {k: v[2] for k, v in rounds.items()}, "best": found[:top]}


def table(figures: dict, scenarios: Sequence[str] = tuple(SCENARIOS)) -> str:
    lines = [f"staged schedules saving >= {figures['min_ratio']:g}x calls: {figures['searched']} "
             f"searched, {figures['seeds']} rounds per scenario, rho={figures['rho']}; "
             "quality = P(best) / P(best) of full evaluation",
             f"{'schedule (end:keep ... final)':<30} {'ratio':>6} "
             + " ".join(f"{s:>11}" for s in scenarios) + f" {'worst':>6}"]
    for r in figures["best"]:
        shape = " ".join(f"{e}:{k}" for e, k in r["stages"]) + f" {r['final']}"
        lines.append(f"{shape:<30} {r['call_ratio']:>6.2f} "
                     + " ".join(f"{r['quality'][s]:>11.3f}" for s in scenarios)
                     + f" {r['worst_quality']:>6.3f}")
    return "\n".join(lines)
