"""The head-to-head figure of `bench peers` (the `qwen` scale): where a gain is possible, does
ours with operators beat the better peer, and by how much?

Per task, the better peer is the peer arm (GEPA or OpenEvolve, with or without the block
menu) with the highest mean held-out score; the paired unit is a held-out problem: its score
under ours minus the better peer's, averaged over the seeds that scored it under both. The
seeds share the held-out problems, so a problem's scores under two seeds are not independent
draws; resampling (seed, problem) pairs would narrow the interval with every seed added. The
figure is the mean over the gain tasks (where a block is known to help) of ours minus the
better peer, with a bootstrap 95% interval that resamples the problems within each task; the
control tasks (where nothing is known to help) are reported beside it, never in it. Choosing
the better peer after seeing the scores favours the peers, and the interval does not account
for that choice: a conservative figure.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from harness_learning_lab.bench.peers_systems import MENU, OPS, PEERS

DRAWS = 2000


def paired(results: list[dict], task: str, a: str, b: str) -> np.ndarray:
    """Per held-out problem of `task`: `a`'s score minus `b`'s, averaged over the seeds whose
    runs of both scored it (runs stored before per-problem scores were kept have none)."""
    runs = {(r["system"], r["seed"]): r.get("final_problems") or {}
            for r in results if r["task"] == task}
    seeds = sorted({seed for (system, seed) in runs if system in (a, b)})
    by_problem: dict[str, list[float]] = {}
    for s in seeds:
        if (a, s) in runs and (b, s) in runs:
            for pid in runs[(a, s)].keys() & runs[(b, s)].keys():
                by_problem.setdefault(pid, []).append(runs[(a, s)][pid] - runs[(b, s)][pid])
    return np.asarray([statistics.mean(by_problem[pid]) for pid in sorted(by_problem)],
                      dtype=float)


def interval(groups: list[np.ndarray], seed: int = 0) -> tuple[float, float, float]:
    """Mean over groups of each group's mean, with a stratified bootstrap 95% interval."""
    rng = np.random.default_rng(seed)
    point = float(np.mean([g.mean() for g in groups]))
    draws = np.mean([g[rng.integers(0, len(g), (DRAWS, len(g)))].mean(axis=1)
                     for g in groups], axis=0)
    return point, float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975))


def better_peer(results: list[dict], task: str) -> str | None:
    """The peer arm with the highest mean held-out score on `task` (None if none ran)."""
    means: dict[str, list[float]] = {}
    for r in results:
        if r["task"] == task and r["system"].removesuffix(MENU) in PEERS:
            means.setdefault(r["system"], []).append(r["final_test"])
    return max(means, key=lambda s: (statistics.mean(means[s]), s)) if means else None


def head_to_head(results: list[dict], gain_tasks: list[str], ours: str = f"best_valid{OPS}",
                 ) -> dict[str, Any] | None:
    """Ours minus the better peer per task and over the gain tasks, and ours minus its
    ablation (the same system without operators); None when the arms are not all there."""
    tasks = sorted({r["task"] for r in results})
    systems = {r["system"] for r in results}
    if ours not in systems or not any(s.removesuffix(MENU) in PEERS for s in systems):
        return None
    rows, gain_groups = [], []
    ablation = ours.removesuffix(OPS)
    for task in tasks:
        for other in filter(None, (better_peer(results, task), ablation)):
            diff = paired(results, task, ours, other)
            if not len(diff):
                continue
            point, lo, hi = interval([diff])
            versus = "ablation" if other == ablation else "better peer"
            rows.append({"task": task, "versus": versus, "other": other, "n": len(diff),
                         "gain": round(point, 4), "ci95": [round(lo, 4), round(hi, 4)],
                         "in_figure": versus == "better peer" and task in gain_tasks})
            if rows[-1]["in_figure"]:
                gain_groups.append(diff)
    figure = None
    if gain_groups and len(gain_groups) == len([t for t in gain_tasks if t in tasks]):
        point, lo, hi = interval(gain_groups)
        figure = {"gain": round(point, 4), "ci95": [round(lo, 4), round(hi, 4)],
                  "tasks": [t for t in gain_tasks if t in tasks]}
    return {"ours": ours, "rows": rows, "figure": figure}


def text(h2h: dict[str, Any]) -> str:
    """The figure and its rows, printed under the table."""
    ours = h2h["ours"]
    lines = ["", f"head to head: {ours} minus the other, held-out, paired per problem "
             "(mean over seeds; bootstrap 95% over problems; the better peer is chosen per "
             "task by its mean)"]
    for r in h2h["rows"]:
        mark = ("" if r["in_figure"] else "  (operators' own effect)"
                if r["versus"] == "ablation" else "  (control task: outside the figure)")
        lines.append(f"  {r['task']:<20} - {r['other']:<16} {r['gain']:+.3f} "
                     f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]  n={r['n']}{mark}")
    fig = h2h["figure"]
    if fig is None:
        lines.append("  figure: n/a (a gain task lacks per-problem scores of both arms)")
    else:
        lines.append(f"  figure: mean over {', '.join(fig['tasks'])} of ({ours} - better peer) = "
                     f"{fig['gain']:+.3f} [{fig['ci95'][0]:+.3f}, {fig['ci95'][1]:+.3f}]")
    return "\n".join(lines)
