"""What fully adaptive allocation would buy over staged racing, and what it costs in wall time.

Staged racing (`graphs.adapter.racing`) decides three times a round, so every live candidate's
problems of a stage run at once. A fully adaptive policy decides after every few problems and
sends them where they tell the most. Two of the best known kinds, on the same simulated rounds
as `harness_learning_lab.bench.racing_frontier` (same outcome model, common random numbers):

- **top-two Thompson sampling**: a Beta posterior per candidate; each step draws from the
  posteriors and gives `batch` more problems to the drawn leader (with probability `beta`) or
  to the drawn runner-up; the pick is the best posterior mean. Spends exactly its budget.
- **paired chase**: the leader is the best mean among the candidates furthest along; the
  candidate most likely to beat it on their common problems (a paired z-test) catches up,
  or both go on when level. It stops early once no candidate is `eps` likely to beat the leader.

Both send `batch` problems (or two batches) per decision, so a round takes many decisions in
sequence. The wall time reported is that of an endpoint with `slots` concurrent calls at
`latency_s` per call, problems of one decision in waves of `slots`, each problem a chain of
`calls_per_problem` calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning_lab.bench.racing import ratio_se
from harness_learning_lab.bench.racing_frontier import best_mean, choices, draw, stage_costs


@dataclass(frozen=True)
class Endpoint:
    slots: int = 64
    latency_s: float = 1.0
    calls_per_problem: int = 5

    def wall_s(self, problems_per_decision: np.ndarray) -> float:
        """Mean wall time of rounds whose decisions sent these many problems (rounds x steps)."""
        waves = np.ceil(problems_per_decision / self.slots)
        return float(waves.sum(axis=1).mean()) * self.calls_per_problem * self.latency_s


def thompson(sums: np.ndarray, budget: int, batch: int = 4, start: int = 8, beta: float = 0.5,
             draws: int = 64, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-two Thompson sampling per round: (choice, problems run, problems per decision)."""
    rng = np.random.default_rng(seed)
    rounds, k, width = sums.shape
    pool, at = width - 1, np.arange(rounds)
    n = np.full((rounds, k), start)
    steps = [np.full(rounds, k * start)]
    for _ in range((budget - k * start) // batch):
        s = np.take_along_axis(sums, n[:, :, None], 2)[:, :, 0]
        top = rng.beta((1 + s)[:, :, None], (1 + n - s)[:, :, None],
                       size=(rounds, k, draws)).argmax(1)
        lead = top[:, 0]
        other = top != lead[:, None]
        runner = np.where(other.any(1), top[at, other.argmax(1)], lead)
        pick = np.where(rng.random(rounds) < beta, lead, runner)
        pick = np.where(n[at, pick] + batch > pool, n.argmin(1), pick)
        ok = n[at, pick] + batch <= pool
        n[at[ok], pick[ok]] += batch
        steps.append(np.where(ok, batch, 0))
    s = np.take_along_axis(sums, n[:, :, None], 2)[:, :, 0]
    return ((1 + s) / (2 + n)).argmax(1), n.sum(1), np.stack(steps, 1)


def chase(outcomes: np.ndarray, budget: int, batch: int = 4, start: int = 16, eps: float = 0.08,
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired chase per round: (choice, problems run, problems per decision)."""
    rounds, k, pool = outcomes.shape
    at, ks = np.arange(rounds), np.arange(k)
    o = outcomes.astype(np.int32)
    sums = np.concatenate([np.zeros((rounds, k, 1), np.int32), np.cumsum(o, 2)], 2)
    cross = np.concatenate([np.zeros((rounds, k, k, 1), np.int32),
                            np.cumsum(o[:, :, None, :] * o[:, None, :, :], 3)], 3)
    n = np.full((rounds, k), start)
    steps, done = [np.full(rounds, k * start)], np.zeros(rounds, bool)
    while True:
        s = np.take_along_axis(sums, n[:, :, None], 2)[:, :, 0].astype(float)
        lead = _leader(s, n)
        s_lead = sums[at[:, None], lead[:, None], n]  # the leader on each one's problems
        gap = (s_lead - s) / n
        discordant = s_lead + s - 2 * cross[at[:, None], lead[:, None], ks[None, :], n]
        var = np.maximum(discordant / n - gap**2, 0) * n / np.maximum(n - 1, 1)
        se = np.maximum(np.sqrt(var / n), 0.5 / np.sqrt(n))
        beats = norm.sf(gap / se)
        beats[at, lead] = -1.0
        rival = beats.argmax(1)
        n_lead, n_rival = n[at, lead], n[at, rival]
        behind = n_rival < n_lead
        add_rival = np.where(behind, np.minimum(batch, n_lead - n_rival), batch)
        add_lead = np.where(behind, 0, batch)
        fits = (n_lead + add_lead <= pool) & (n.sum(1) + add_lead + add_rival <= budget)
        done |= (beats[at, rival] < eps) | ~fits
        if done.all():
            break
        add_lead, add_rival = np.where(done, 0, add_lead), np.where(done, 0, add_rival)
        n[at, lead] += add_lead
        n[at, rival] += add_rival
        steps.append(add_lead + add_rival)
    s = np.take_along_axis(sums, n[:, :, None], 2)[:, :, 0].astype(float)
    return _leader(s, n), n.sum(1), np.stack(steps, 1)


def _leader(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Best mean among the candidates furthest along; ties to the earliest."""
    front = n == n.max(1, keepdims=True)
    return np.where(front, s / n - 1e-9 * np.arange(n.shape[1]), -np.inf).argmax(1)


def compare(seeds: int = 4000, candidates: int = 8, problems: int = 64, rho: float = 0.5,
            seed: int = 7, endpoint: Endpoint | None = None) -> dict:
    """Per policy: call ratio, quality per scenario and wall time at the endpoint."""
    endpoint = endpoint or Endpoint()
    rounds = draw(seeds, candidates, problems, rho, seed)
    full = candidates * problems
    half = full // 2
    halving = ((problems // 4, math.ceil(candidates / 2)),
               (problems // 2, math.ceil(candidates / 4))), problems
    runs = {
        "full evaluation": _staged(((), problems)),
        "staged halving 16/32/64 (no z-test)": _staged(halving),
        "our race rule (RaceRule defaults)": lambda sums: _rule(sums, RaceRule()),
        "top-two Thompson, batch 4": lambda sums: thompson(sums, half),
        # the chase stops early on clear rounds, so a cap of 1.25x half the calls still
        # averages >= 2x fewer than full evaluation (its row shows the ratio it reached)
        "paired chase, batch 4": lambda sums: chase(np.diff(sums, axis=2), half + half // 4),
    }
    full_right = {name: best_mean(sums[:, :, problems] / problems) == best
                  for name, (sums, best, _) in rounds.items()}
    rows = []
    for name, policy in runs.items():
        quality, se, spent, walls = {}, {}, [], []
        for scenario, (sums, best, p_full) in rounds.items():
            choice, problems_run, per_step = policy(sums)
            right = choice == best
            quality[scenario] = float(right.mean()) / max(p_full, 1e-9)
            se[scenario] = ratio_se(int(right.sum()), int(full_right[scenario].sum()),
                                    int((right & full_right[scenario]).sum()), len(best))
            spent.append(problems_run.mean())
            walls.append(endpoint.wall_s(per_step))
        rows.append({"policy": name, "call_ratio": full / max(spent),
                     "worst_quality": min(quality.values()), "quality": quality, "se": se,
                     "waves": max(walls) / endpoint.calls_per_problem / endpoint.latency_s,
                     "wall_s": max(walls)})
    return {"seeds": seeds, "rho": rho, "slots": endpoint.slots, "latency_s": endpoint.latency_s,
            "calls_per_problem": endpoint.calls_per_problem, "rows": rows}


def _staged(schedule):
    """A staged schedule of `harness_learning_lab.bench.racing_frontier` as a policy: every round spends the
    same problems, stage by stage."""

    def policy(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        per_stage = np.array(stage_costs(schedule, sums.shape[1]))
        rounds = len(sums)
        return (choices(schedule, sums), np.full(rounds, per_stage.sum()),
                np.tile(per_stage, (rounds, 1)))

    return policy


def _rule(sums: np.ndarray, rule: RaceRule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The adapter's rule, stage by stage as `graphs.adapter.racing.race` runs it."""
    rounds, k, width = sums.shape
    o = np.diff(sums, axis=2)
    ends = rule.stage_ends(width - 1)
    choice, spent = np.zeros(rounds, int), np.zeros(rounds, int)
    steps = np.zeros((rounds, len(ends)), int)
    for r in range(rounds):
        live, start = list(range(k)), 0
        for i, end in enumerate(ends):
            steps[r, i] = len(live) * (end - start)
            start = end
            if end < ends[-1] and len(live) > 1:
                dropped = rule.step({c: o[r, c, :end].tolist() for c in live}, range(k), i)
                live = [c for c in live if c not in dropped]
            if len(live) == 1:
                break
        spent[r] = steps[r].sum()
        choice[r] = max(live, key=lambda c: (sums[r, c, start] / start, -c))
    return choice, spent, steps


def _worst_se(row: dict) -> float:
    return row["se"][min(row["quality"], key=row["quality"].get)]


def table(figures: dict) -> str:
    scenarios = list(figures["rows"][0]["quality"])
    head = (f"adaptive allocation vs staged racing: {figures['seeds']} rounds per scenario, "
            f"rho={figures['rho']}; wall = worst scenario's mean at {figures['slots']} slots x "
            f"{figures['latency_s']:g} s per call x {figures['calls_per_problem']} calls per "
            "problem")
    cols = (f"{'policy':<36} {'ratio':>6} " + " ".join(f"{s:>11}" for s in scenarios)
            + f" {'worst +- se':>14} {'waves':>6} {'wall s':>7}")
    lines = [head, cols, "-" * len(cols)]
    for r in figures["rows"]:
        lines.append(f"{r['policy']:<36} {r['call_ratio']:>6.2f} "
                     + " ".join(f"{r['quality'][s]:>11.3f}" for s in scenarios)
                     + f" {r['worst_quality']:>6.3f} +- {_worst_se(r):.3f} {r['waves']:>6.1f}"
                     + f" {r['wall_s']:>7.0f}")
    return "\n".join(lines)
