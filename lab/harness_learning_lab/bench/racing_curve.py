"""The price of a call saving: how much of full evaluation's P(best) racing can keep at each
saving, and where our rules sit on that curve.

For each saving in `RATIOS`, the best staged schedule of `harness_learning_lab.bench.racing_frontier` (the
one with the highest worst-scenario quality among those saving at least that much) traces the
frontier. The schedule is chosen on the rounds it is scored on, so the frontier is slightly
optimistic. Our rules (`RULES`) are simulated apart, on other rounds (`harness_learning_lab.bench.racing`,
seed 0 against the frontier's seed 7), with their z-test: an honest point each, to set beside
the curve. A user who pays more for a wrong pick than for calls moves left along it with
`AdaptConfig.race` (`harness-learn adapt --race JSON`).
"""

from __future__ import annotations

from pathlib import Path

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning_lab.bench import racing as racing_bench
from harness_learning_lab.bench.racing_frontier import cost, draw, quality, schedules

RATIOS = (1.25, 1.5, 1.6, 1.75, 1.9, 2.0, 2.25, 2.5, 3.0)

RULES: dict[str, RaceRule] = {
    "halving": RaceRule(fractions=(0.25, 0.5, 1.0), keep=(0.5,)),
    "keep 4 then 3 (default)": RaceRule(),
    "keep 5 then 3": RaceRule(fractions=(0.3125, 0.6875, 1.0), keep=(0.625, 0.6)),
}
"""Rules of 8 candidates x 64 problems: 16:4 32:2 64, 20:4 48:3 64 and 20:5 44:3 64."""


def curve(ratios: tuple[float, ...] = RATIOS, seeds: int = 4000, candidates: int = 8,
          problems: int = 64, rho: float = 0.5, seed: int = 7,
          rules: dict[str, RaceRule] | None = None) -> dict:
    """The frontier at each saving in `ratios`, and each rule's simulated point."""
    rounds = draw(seeds, candidates, problems, rho, seed)
    full = candidates * problems
    scored = [(full / cost(s, candidates), s, quality(s, rounds))
              for s in schedules(candidates, problems)]
    frontier = []
    for at_least in ratios:
        ok = [x for x in scored if x[0] >= at_least]
        if not ok:
            continue
        ratio, (stages, final), q = max(ok, key=lambda x: min(x[2].values()))
        frontier.append({"min_ratio": at_least, "call_ratio": ratio, "worst_quality": min(q.values()),
                         "quality": q, "stages": [list(x) for x in stages], "final": final})
    points = []
    for name, rule in (RULES if rules is None else rules).items():
        sim = racing_bench.simulate(seeds=seeds, problems=problems, rho=rho, rule=rule)
        points.append({"rule": name, "fractions": list(rule.fractions),
                       "keep": None if rule.keep is None else list(rule.keep), "z": rule.z,
                       "call_ratio": sim["call_ratio"],
                       "worst_quality": sim["choice_quality_ratio"],
                       "quality": {r["scenario"]: r["choice_quality_ratio"] for r in sim["rows"]},
                       "se": {r["scenario"]: r["choice_quality_se"] for r in sim["rows"]}})
    return {"seeds": seeds, "rho": rho, "problems": problems, "candidates": candidates,
            "p_best_full": {k: v[2] for k, v in rounds.items()}, "frontier": frontier,
            "rules": points}


def crossing(figures: dict, target: float = 0.95) -> float | None:
    """The largest saving on the frontier that still keeps `target` of full evaluation's P(best)."""
    ok = [f["call_ratio"] for f in figures["frontier"] if f["worst_quality"] >= target]
    return max(ok, default=None)


def table(figures: dict) -> str:
    scenarios = list(figures["p_best_full"])
    lines = [f"racing's trade-off: worst-scenario quality (P(best) / P(best) of full evaluation) "
             f"by call saving; {figures['seeds']} rounds per scenario, rho={figures['rho']}",
             f"{'':<22} {'schedule / rule':<50} {'ratio':>6} "
             + " ".join(f"{s:>11}" for s in scenarios) + f" {'worst':>6}"]
    for f in figures["frontier"]:
        shape = " ".join(f"{e}:{k}" for e, k in f["stages"]) + f" {f['final']}"
        lines.append(f"{'frontier >= ' + format(f['min_ratio'], 'g') + 'x':<22} {shape:<50} "
                     f"{f['call_ratio']:>6.2f} "
                     + " ".join(f"{f['quality'][s]:>11.3f}" for s in scenarios)
                     + f" {f['worst_quality']:>6.3f}")
    for r in figures["rules"]:
        shape = f"fractions {r['fractions']} keep {r['keep']}"
        lines.append(f"{'rule ' + r['rule']:<22} {shape:<50} {r['call_ratio']:>6.2f} "
                     + " ".join(f"{r['quality'][s]:>11.3f}" for s in scenarios)
                     + f" {r['worst_quality']:>6.3f}")
    at = crossing(figures)
    lines.append("frontier keeps >= 0.95 everywhere up to "
                 + (f"{at:.2f}x fewer calls" if at else "no saving in this sweep"))
    return "\n".join(lines)


def plot(figures: dict, path: Path) -> Path:
    """Frontier and rule points against the issue's target (2x fewer calls at >= 0.95)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    front = figures["frontier"]
    ax.plot([f["call_ratio"] for f in front], [f["worst_quality"] for f in front], "o-",
            color="0.3", label="best staged schedule (worst scenario)")
    for scenario in figures["p_best_full"]:
        ax.plot([f["call_ratio"] for f in front], [f["quality"][scenario] for f in front],
                ":", alpha=0.7, label=f"  same schedules, {scenario}")
    for r in figures["rules"]:
        ax.plot(r["call_ratio"], r["worst_quality"], "s", markersize=8, label=f"rule: {r['rule']}")
    ax.axhline(0.95, color="red", lw=0.8, ls="--")
    ax.axvline(2.0, color="red", lw=0.8, ls="--", label="target: >= 2x at >= 0.95")
    ax.set_xlabel("call saving (full evaluation's Solver calls / racing's)")
    ax.set_ylabel("P(best) / P(best) of full evaluation")
    ax.set_title(f"Racing's trade-off, {figures['candidates']} candidates x "
                 f"{figures['problems']} problems, rho={figures['rho']}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
