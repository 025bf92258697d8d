"""Racing on logged rounds: how alike are real candidates, and how does racing do on them?

The simulated bench (`harness_learning_lab.bench.racing`) draws outcomes with one free parameter, `rho`: the
chance that a candidate's outcome on a problem follows the problem's shared difficulty rather
than its own draw. This reads real rounds from run logs (the selection evaluations of every
round in which at least two versions ran the same problems) and answers two questions:

1. **Which rho fits?** Under the simulation's model two candidates of accuracies p, q are both
   right on a problem with probability rho^2 min(p, q) + (1 - rho^2) p q. Pooling every pair of
   a round, rho^2 = sum(both-right rate - p q) / sum(min(p, q) - p q), with accuracies estimated
   from the round (n / (n - 1) undoes the bias of estimating them); an interval comes from
   resampling the problems. Scores count as right at >= 0.5.
2. **How does racing do on the real outcomes?** A bootstrap replay: each replayed round draws
   `problems` of the logged problems with replacement, and racing (`graphs.adapter.racing`) and
   full evaluation both choose from those. "Best" is the best mean on all the logged problems
   (ties: any of them); regret is the accuracy a pick gives up on them. Each draw puts the
   candidates in a new random order, since both policies break ties by order and a logged
   order says nothing about quality. The figures are those of the simulated bench.

Both use a round's candidates only, not its current version: the adapter evaluates that one on
the selection problems too, but does not race it, and the simulation models candidates.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness_learning.graphs.adapter.racing import RaceRule, race
from harness_learning.harnesses.store.sqlite import FILENAME, SQLiteLogStore
from harness_learning_lab.bench.racing import full_choice, ratio_se


@dataclass(frozen=True)
class LoggedRound:
    source: str
    round: int
    names: list[str]
    scores: np.ndarray
    """versions x problems: every version's score on the problems all of them ran."""
    current: list[bool]
    """Which versions are the round's current one (the parent of another version in it): the
    adapter evaluates it on the selection problems too, but races only the candidates."""

    def candidates(self) -> tuple[list[str], np.ndarray]:
        keep = [i for i, c in enumerate(self.current) if not c]
        return [self.names[i] for i in keep], self.scores[keep]


def logged_rounds(run_dir: str | Path, min_problems: int = 8) -> list[LoggedRound]:
    """The rounds of a run's log in which >= 2 versions ran the same >= `min_problems`
    selection problems. In a raced round only the versions that ran the most problems count
    (the others were dropped early and ran a prefix)."""
    path = Path(run_dir)
    if not (path / FILENAME).is_file():
        raise FileNotFoundError(f"no run log ({FILENAME}) in {path}")
    with SQLiteLogStore(path, read_only=True) as store:
        versions = list(store.iter_versions())
        names = {v.sha: v.note or v.sha[:12] for v in versions}
        parent = {v.sha: v.parent_sha for v in versions}
        order = {v.sha: i for i, v in enumerate(versions)}  # the order they were logged in
        by_round: dict[int, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
        for ev in store.iter_evaluations(purpose="selection"):
            by_round[ev.round][ev.sha][ev.problem_id] = float(ev.result.score or 0.0)
    rounds = []
    for round_, by_sha in sorted(by_round.items()):
        most = max(len(v) for v in by_sha.values())
        shas = sorted((s for s, v in by_sha.items() if len(v) == most),
                      key=lambda s: order.get(s, len(order)))
        common = sorted(set.intersection(*(set(by_sha[s]) for s in shas)))
        if len(shas) >= 2 and len(common) >= min_problems:
            scores = np.array([[by_sha[s][p] for p in common] for s in shas])
            parents = {parent.get(s) for s in shas}
            rounds.append(LoggedRound(str(path), round_, [names.get(s, s[:12]) for s in shas],
                                      scores, [s in parents for s in shas]))
    return rounds


def excess_and_room(right: np.ndarray) -> tuple[float, float]:
    """For a 0/1 (candidates x problems) matrix, summed over candidate pairs: the both-right
    rate beyond independence, and its largest value under the model (at rho = 1). Their
    ratio is the moment estimate of rho^2."""
    k, n = right.shape
    p = right.mean(axis=1)
    both = right @ right.T / n
    i, j = np.triu_indices(k, 1)
    excess = float((both[i, j] - p[i] * p[j]).sum()) * n / max(n - 1, 1)
    return excess, float((np.minimum(p[i], p[j]) - p[i] * p[j]).sum())


def pooled_rho(right: list[np.ndarray]) -> float:
    """rho from several rounds' 0/1 matrices, their pairs pooled."""
    sums = np.array([excess_and_room(m) for m in right]).sum(axis=0)
    return float(np.sqrt(np.clip(sums[0] / sums[1], 0.0, 1.0))) if sums[1] > 0 else float("nan")


def fit_rho(rounds: list[LoggedRound], resamples: int = 1000, seed: int = 0) -> dict:
    """rho over all rounds and a 95% interval from resampling each round's problems; None when
    no pair can tell (every candidate always right, or always wrong)."""
    rng = np.random.default_rng(seed)
    right = [(r.candidates()[1] >= 0.5).astype(float) for r in rounds]
    rho = pooled_rho(right)
    if not np.isfinite(rho):
        return {"rho": None, "rho_low": None, "rho_high": None}
    boot = [pooled_rho([m[:, rng.integers(m.shape[1], size=m.shape[1])] for m in right])
            for _ in range(resamples)]
    low, high = np.nanpercentile(boot, [2.5, 97.5]) if resamples else (rho, rho)
    return {"rho": rho, "rho_low": float(low), "rho_high": float(high)}


async def _replay(scores: np.ndarray, rule: RaceRule, problems: int, draws: int,
                  rng: np.random.Generator) -> dict:
    k, n = scores.shape
    means = scores.mean(axis=1)
    best = set(np.flatnonzero(means >= means.max() - 1e-12).tolist())
    full_right = race_right = both = race_problems = 0
    full_regret = race_regret = 0.0
    for _ in range(draws):
        sample = scores[:, rng.integers(n, size=problems)]
        order = rng.permutation(k).tolist()  # the Proposer's sampling order, which breaks ties

        async def run(c: int, start: int, end: int, sample: np.ndarray = sample) -> list[float]:
            return sample[c, start:end].tolist()

        full_pick = order[full_choice(sample[order])]
        result = await race(order, problems, run, rule)
        race_problems += result.problems_run
        full_regret += means.max() - means[full_pick]
        race_regret += means.max() - means[result.winner]
        full_right += full_pick in best
        race_right += result.winner in best
        both += full_pick in best and result.winner in best
    p_full, p_race = full_right / draws, race_right / draws
    return {"candidates": k, "pool": n, "p_best_full": p_full, "p_best_racing": p_race,
            "call_ratio": k * problems * draws / max(race_problems, 1),
            "choice_quality_ratio": p_race / p_full if p_full else float("nan"),
            "choice_quality_se": ratio_se(race_right, full_right, both, draws),
            "regret_full": full_regret / draws, "regret_racing": race_regret / draws}


def replay(rounds: list[LoggedRound], problems: int = 64, draws: int = 2000,
           rule: RaceRule | None = None, seed: int = 0, pool_resamples: int = 0) -> list[dict]:
    """Racing against full evaluation on bootstrap resamples of each logged round. With
    `pool_resamples`, also an interval of the quality ratio that counts the pool's own
    uncertainty (`pool_interval`)."""
    rng = np.random.default_rng(seed)
    pool_rng = np.random.default_rng([seed, 1])  # its own stream: asking for it moves no figure
    rule = rule or RaceRule()
    rows = []
    for r in rounds:
        names, scores = r.candidates()
        if len(names) < 2:
            continue
        figures = asyncio.run(_replay(scores, rule, problems, draws, rng))
        if pool_resamples:
            figures["quality_pool_interval"] = pool_interval(scores, rule, problems,
                                                             max(1, draws // 2), pool_resamples,
                                                             pool_rng)
        rows.append({"source": r.source, "round": r.round, "names": names,
                     "accuracy": scores.mean(axis=1).round(3).tolist(),
                     "identical": identical(names, scores), **figures})
    return rows


def pool_interval(scores: np.ndarray, rule: RaceRule, problems: int, draws: int,
                  resamples: int, rng: np.random.Generator) -> list[float]:
    """95% interval of the quality ratio when the logged pool is itself resampled: each
    resample redraws the pool's problems (so which candidate is "best" may change) and replays
    `draws` rounds on it. Its width holds the replay's own noise too, so it is conservative."""
    n = scores.shape[1]
    ratios = []
    for _ in range(resamples):
        pool = scores[:, rng.integers(n, size=n)]
        ratio = asyncio.run(_replay(pool, rule, problems, draws, rng))["choice_quality_ratio"]
        if np.isfinite(ratio):
            ratios.append(ratio)
    if not ratios:
        return [float("nan"), float("nan")]
    return [float(x) for x in np.percentile(ratios, [2.5, 97.5])]


def identical(names: list[str], scores: np.ndarray) -> list[list[str]]:
    """Groups of candidates with the very same score on every problem (edits that left the
    Solver's calls unchanged, for instance): any of a group is as good a pick as another."""
    groups: dict[bytes, list[str]] = defaultdict(list)
    for name, row in zip(names, scores, strict=True):
        groups[row.tobytes()].append(name)
    return [g for g in groups.values() if len(g) > 1]


def table(fit: dict, rows: list[dict], problems: int, draws: int) -> str:
    rho = ("cannot be fitted (every candidate always right or always wrong)" if fit["rho"] is None
           else f"fitted {fit['rho']:.2f} (95% interval {fit['rho_low']:.2f}..{fit['rho_high']:.2f})")
    lines = [f"logged rounds: rho {rho}; replay: {draws} bootstrap rounds of {problems} problems",
             f"{'round':<40} {'cands':>5} {'pool':>5} {'ratio':>6} {'P(best) full':>12} "
             f"{'P(best) race':>12} {'quality +- se':>14} {'regret f/r':>13}"]
    for r in rows:
        where = f"{Path(r['source']).name} #{r['round']}"
        lines.append(f"{where:<40} {r['candidates']:>5} {r['pool']:>5} {r['call_ratio']:>6.2f} "
                     f"{r['p_best_full']:>12.3f} {r['p_best_racing']:>12.3f} "
                     f"{r['choice_quality_ratio']:>7.3f} +- {r['choice_quality_se']:.3f} "
                     f"{r['regret_full']:>6.3f}/{r['regret_racing']:.3f}")
        if "quality_pool_interval" in r:
            low, high = r["quality_pool_interval"]
            lines.append(f"  quality with the pool resampled too: 95% interval {low:.3f}..{high:.3f}")
        lines.append("  accuracy: " + ", ".join(f"{n} {a:.2f}" for n, a in
                                                zip(r["names"], r["accuracy"], strict=True)))
        if r["identical"]:
            lines.append("  same score on every problem: "
                         + "; ".join(" = ".join(g) for g in r["identical"]))
    return "\n".join(lines)
