"""Racing against full evaluation, by simulation: candidates with known true accuracies answer
each selection problem right with that probability, and both policies choose from the outcomes.

Outcomes of one problem are correlated across candidates (candidates of a round descend from the
same parent, so easy problems are easy for all): with probability `rho` a candidate's outcome is
read from the problem's shared uniform draw, otherwise from its own. Each candidate stays
Bernoulli(p) on its own. Calls are counted as problems run x Solver calls per problem.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness_learning.graphs.adapter.racing import RaceRule, race

Scenario = Callable[[np.random.Generator], np.ndarray]


def spread(rng: np.random.Generator) -> np.ndarray:
    """Eight candidates of unrelated quality (uniform 0.1..0.7)."""
    return rng.uniform(0.1, 0.7, 8)


def one_better(rng: np.random.Generator) -> np.ndarray:
    """Seven near the parent (0.40 +- 0.05) and one real improvement (+0.15)."""
    p = rng.uniform(0.35, 0.45, 8)
    p[rng.integers(8)] = 0.55 + rng.uniform(0, 0.05)
    return p


def close(rng: np.random.Generator) -> np.ndarray:
    """Eight candidates within 0.15 of each other (hard to tell apart on 64 problems)."""
    return rng.uniform(0.35, 0.5, 8)


SCENARIOS: dict[str, Scenario] = {"spread": spread, "one_better": one_better, "close": close}


@dataclass
class PolicyFigures:
    problems_run: int = 0
    picked_best: int = 0
    regret: float = 0.0

    def add(self, problems: int, picked: int, p: np.ndarray) -> None:
        self.problems_run += problems
        self.picked_best += int(picked == int(np.argmax(p)))
        self.regret += float(p.max() - p[picked])


def outcomes(rng: np.random.Generator, p: np.ndarray, n: int, rho: float) -> np.ndarray:
    """A (candidates x problems) 0/1 matrix, correlated across candidates by `rho`."""
    shared = rng.random(n)
    own = rng.random((len(p), n))
    use_shared = rng.random((len(p), n)) < rho
    draws = np.where(use_shared, shared[None, :], own)
    return (draws < p[:, None]).astype(float)


def full_choice(scores: np.ndarray) -> int:
    """best_valid on full evaluations: the best mean, ties to the earliest candidate."""
    return int(np.argmax(scores.mean(axis=1)))


async def _simulate(scenario: Scenario, seeds: int, n: int, rho: float, rule: RaceRule,
                    seed: int) -> tuple[PolicyFigures, PolicyFigures, PolicyFigures, int]:
    """Full evaluation, racing and half-pool figures, and the rounds where racing and full
    evaluation both picked the best (for the quality ratio's standard error)."""
    rng = np.random.default_rng(seed)
    full, racing, half, both = PolicyFigures(), PolicyFigures(), PolicyFigures(), 0
    for _ in range(seeds):
        p = scenario(rng)
        scores = outcomes(rng, p, n, rho)
        full_pick = full_choice(scores)
        full.add(scores.size, full_pick, p)
        half.add(scores[:, : n // 2].size, full_choice(scores[:, : n // 2]), p)

        async def run(k: int, start: int, end: int, scores: np.ndarray = scores) -> list[float]:
            return scores[k, start:end].tolist()

        result = await race(list(range(len(p))), n, run, rule)
        racing.add(result.problems_run, int(result.winner), p)
        best = int(np.argmax(p))
        both += int(result.winner == best and full_pick == best)
    return full, racing, half, both


def simulate(scenarios: Sequence[str] = ("spread", "one_better", "close"), seeds: int = 4000,
             problems: int = 64, calls_per_problem: int = 5, rho: float = 0.5,
             rule: RaceRule | None = None, seed: int = 0) -> dict:
    """Figures per scenario and overall: Solver calls and P(picking the truly best)."""
    rule = rule or RaceRule()
    rows = []
    for name in scenarios:
        full, racing, half, both = asyncio.run(_simulate(SCENARIOS[name], seeds, problems, rho,
                                                         rule, seed))
        rows.append({
            "scenario": name,
            "full_calls": full.problems_run * calls_per_problem / seeds,
            "racing_calls": racing.problems_run * calls_per_problem / seeds,
            "call_ratio": full.problems_run / racing.problems_run,
            "p_best_full": full.picked_best / seeds,
            "p_best_racing": racing.picked_best / seeds,
            "choice_quality_ratio": racing.picked_best / max(1, full.picked_best),
            "choice_quality_se": ratio_se(racing.picked_best, full.picked_best, both, seeds),
            "p_best_half": half.picked_best / seeds,
            "half_quality_ratio": half.picked_best / max(1, full.picked_best),
            "regret_full": full.regret / seeds,
            "regret_racing": racing.regret / seeds,
        })
    return {
        "seeds": seeds, "problems": problems, "calls_per_problem": calls_per_problem,
        "rho": rho, "rule": {"fractions": list(rule.fractions), "z": rule.z,
                             "keep": None if rule.keep is None else list(rule.keep)},
        "rows": rows,
        "call_ratio": min(r["call_ratio"] for r in rows),
        "choice_quality_ratio": min(r["choice_quality_ratio"] for r in rows),
    }


def ratio_se(a: int, b: int, ab: int, n: int) -> float:
    """Standard error of P(a)/P(b) from n paired rounds (a, b: rounds each picked the best; ab:
    rounds both did), by the delta method. Racing and full evaluation see the same outcomes,
    so the pairing makes this much smaller than two independent proportions would."""
    if b == 0:
        return float("nan")
    pa, pb, pab = a / n, b / n, ab / n
    q = pa / pb
    return float(np.sqrt(max(pa + q * q * pb - 2 * q * pab, 0.0) / n) / pb)


def table(figures: dict) -> str:
    """One fixed-width table of `simulate`'s figures."""
    head = (f"racing vs full evaluation: 8 candidates x {figures['problems']} problems x "
            f"{figures['calls_per_problem']} calls, {figures['seeds']} seeds per scenario, "
            f"rho={figures['rho']}, rule={figures['rule']}")
    cols = f"{'scenario':<11} {'full calls':>10} {'race calls':>10} {'ratio':>6} " \
           f"{'P(best) full':>12} {'P(best) race':>12} {'quality +- se':>14} {'regret f/r':>13} " \
           f"{'half-pool quality':>17}"
    lines = [head, cols, "-" * len(cols)]
    for r in figures["rows"]:
        lines.append(
            f"{r['scenario']:<11} {r['full_calls']:>10.0f} {r['racing_calls']:>10.0f} "
            f"{r['call_ratio']:>6.2f} {r['p_best_full']:>12.3f} {r['p_best_racing']:>12.3f} "
            f"{r['choice_quality_ratio']:>7.3f} +- {r['choice_quality_se']:.3f} "
            f"{r['regret_full']:>6.3f}/{r['regret_racing']:.3f} "
            f"{r['half_quality_ratio']:>17.3f}")
    lines.append("half-pool quality: full evaluation on half the problems, the plain way to "
                 "spend 2x fewer calls, for comparison")
    lines.append(f"worst case: call_ratio {figures['call_ratio']:.2f}, "
                 f"choice_quality_ratio {figures['choice_quality_ratio']:.3f}")
    return "\n".join(lines)
