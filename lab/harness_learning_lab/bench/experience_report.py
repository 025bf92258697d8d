"""Figures of `bench experience`: per (type, arm) the held-out score with a paired bootstrap 95%
interval of its gain over the Proposer-only arm, Solver calls, Solver calls until the final
version was first reached, wasted tries, the share of structural final versions, and the share
of adopted library changes that are a registered operator's output; per arm the means over the
held-out types (the control apart); the issue's targets; the table (Markdown and JSON) and the
plot.

Paired unit: a held-out problem, its score under an arm minus its score under the other,
averaged over the seeds that ran both (the seeds share the test problems). A type "falls"
when the paired 95% interval of its final version against its seed lies below 0.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness_learning_lab.bench.blocks import paired_interval

BASE = "proposer"
ARMS = ("proposer", "library", "operators", "continual", "retention")


def _paired(a: list[dict], b: list[dict], key_a: str = "final_problems",
            key_b: str = "final_problems") -> tuple[list[float], list[float]]:
    """Per problem, `a`'s and `b`'s scores averaged over the seeds both ran."""
    by_seed_b = {r["seed"]: r[key_b] for r in b}
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in a:
        other = by_seed_b.get(r["seed"])
        for pid in sorted((r[key_a].keys() & other.keys()) if other else ()):
            pairs[pid].append((r[key_a][pid], other[pid]))
    ids = sorted(pairs)
    return ([statistics.mean(x for x, _ in pairs[i]) for i in ids],
            [statistics.mean(y for _, y in pairs[i]) for i in ids])


def _ci(arm: list[float], base: list[float]) -> list[float] | None:
    if not arm:
        return None
    gain, lo, hi = paired_interval(base, arm)
    return [round(gain, 3), round(lo, 3), round(hi, 3)]


def rows(results: list[dict], split: dict[str, Any]) -> list[dict]:
    """One row per (type, arm) of the test phase, continual and retention."""
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in results:
        by[(r["task"], r["arm"])].append(r)
    out = []
    for task in [*split["held_out"], split["control"]]:
        for arm in ARMS:
            runs = by.get((task, arm))
            if not runs:
                continue
            base = by.get((task, BASE), [])
            versus_seed = _ci(*_paired(runs, runs, "final_problems", "seed_problems"))
            versus_base = _ci(*_paired(runs, base)) if arm != BASE and base else None
            adopted = sum(r["library_adopted"] for r in runs)
            row = {"task": task, "arm": arm, "control": task == split["control"],
                   "seeds": len(runs), "n": len(runs[0]["final_problems"]),
                   "held_out": _mean(runs, "held_out"), "seed": _mean(runs, "seed_held_out"),
                   "gain_vs_proposer": versus_base, "gain_vs_seed": versus_seed,
                   "falls": bool(versus_seed and versus_seed[2] < 0),
                   "solver_calls": _mean(runs, "solver_calls"),
                   "calls_to_final": _mean(runs, "calls_to_final"),
                   "wasted": sum(r["wasted"] for r in runs),
                   "candidates": sum(r["candidates"] for r in runs),
                   "structural": _mean(runs, "structural"),
                   "library_adopted": adopted,
                   "library_as_operator": (None if not adopted else round(
                       sum(r["library_as_operator"] for r in runs) / adopted, 3)),
                   "adopted": sorted({o for r in runs for o in r["adopted_origins"]})}
            if arm == "retention" and by.get((task, "continual")):
                row["gain_vs_continual"] = _ci(*_paired(runs, by[(task, "continual")]))
            out.append(row)
    return out


def _mean(runs: list[dict], key: str) -> float:
    return round(statistics.mean(float(r[key]) for r in runs), 3)


def summary(table: list[dict]) -> dict[str, Any]:
    """Per arm, means over the held-out types (not the control); the targets where their arms
    ran."""
    arms: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        mine = [r for r in table if r["arm"] == arm and not r["control"]]
        if mine:
            arms[arm] = {"held_out": round(statistics.mean(r["held_out"] for r in mine), 3),
                         "solver_calls": round(statistics.mean(r["solver_calls"] for r in mine), 1),
                         "types": len(mine)}
    targets: dict[str, bool] = {}
    lib, ops, base = arms.get("library"), arms.get("operators"), arms.get(BASE)
    if lib and ops:
        targets["library >= operators, at <= 0.7x its Solver calls"] = (
            lib["held_out"] >= ops["held_out"]
            and lib["solver_calls"] <= 0.7 * ops["solver_calls"])
    if lib and base:
        targets["library >= proposer + 0.30"] = lib["held_out"] >= base["held_out"] + 0.30
    if lib:
        targets["no held-out type falls below its seed (library)"] = not any(
            r["falls"] for r in table if r["arm"] == "library" and not r["control"])
    kept = [r["gain_vs_continual"] for r in table if r.get("gain_vs_continual")]
    if kept:
        targets["retention loses nothing"] = all(ci[2] >= 0 for ci in kept)
    return {"arms": arms, "targets": targets}


def _fmt(ci: list[float] | None) -> str:
    return "-" if ci is None else f"{ci[0]:+.3f} [{ci[1]:+.3f}, {ci[2]:+.3f}]"


def markdown(table: list[dict], summ: dict[str, Any]) -> str:
    """The rows, the arms' means and the targets as Markdown."""
    lines = ["| type | arm | n | seed | held-out | gain vs Proposer only (95% CI) | Solver calls "
             "| calls to final | wasted/tried | structural | library = operator |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        name = f"{r['task']} (control)" if r["control"] else r["task"]
        share = "-" if r["library_as_operator"] is None else (
            f"{r['library_as_operator']:.2f} of {r['library_adopted']}")
        fall = " (falls)" if r["falls"] else ""
        lines.append(f"| {name} | {r['arm']} | {r['n']} | {r['seed']:.3f} | "
                     f"{r['held_out']:.3f}{fall} | {_fmt(r['gain_vs_proposer'])} | "
                     f"{r['solver_calls']:.0f} | {r['calls_to_final']:.0f} | "
                     f"{r['wasted']}/{r['candidates']} | {r['structural']:.2f} | {share} |")
    lines += ["", "| arm | held-out (mean over held-out types) | Solver calls | types |",
              "|---|---|---|---|"]
    lines += [f"| {a} | {s['held_out']:.3f} | {s['solver_calls']:.1f} | {s['types']} |"
              for a, s in summ["arms"].items()]
    for r in table:
        if r.get("gain_vs_continual"):
            lines.append(f"\nretention {r['task']}: {_fmt(r['gain_vs_continual'])} against its "
                         "continual run")
    lines += ["", *(f"- target {'met' if ok else 'NOT met'}: {name}"
                    for name, ok in summ["targets"].items())]
    return "\n".join(lines)


def write(out: Path, table: list[dict], summ: dict[str, Any], title: str) -> list[Path]:
    """OUT/table.md, OUT/table.json and OUT/experience.png."""
    md, js = out / "table.md", out / "table.json"
    md.write_text(f"# {title.splitlines()[0]}\n\n{title.splitlines()[-1]}\n\n"
                  f"{markdown(table, summ)}\n")
    js.write_text(json.dumps({"rows": table, **summ}, indent=1))
    return [md, js, plot(table, out / "experience.png", title)]


def plot(table: list[dict], path: Path, title: str) -> Path:
    """Two panels of grouped bars per type and arm: the final version's held-out score (the
    seed as a dash over each group), and the run's Solver calls (the arms' gains are often
    the same block's, so what they paid for it is the difference)."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r["task"] for r in table))
    arms = [a for a in ARMS if any(r["arm"] == a for r in table)]
    width = 0.8 / max(len(arms), 1)
    fig, (score, calls) = plt.subplots(2, 1, figsize=(max(6.0, 1.4 * len(tasks)), 7.0),
                                       sharex=True)
    for i, arm in enumerate(arms):
        cells = {r["task"]: r for r in table if r["arm"] == arm}
        xs = [t for t, task in enumerate(tasks) if task in cells]
        at = [x + i * width for x in xs]
        score.bar(at, [cells[tasks[x]]["held_out"] for x in xs], width, label=arm)
        calls.bar(at, [cells[tasks[x]]["solver_calls"] for x in xs], width, label=arm)
    seeds = {r["task"]: r["seed"] for r in table}
    score.hlines([seeds[t] for t in tasks], [x - width / 2 for x in range(len(tasks))],
                 [x + 0.8 - width / 2 for x in range(len(tasks))], colors="black",
                 linestyles="dashed", label="seed")
    calls.set_xticks([x + 0.4 - width / 2 for x in range(len(tasks))])
    calls.set_xticklabels([t.removeprefix("rg:") for t in tasks], fontsize=8)
    score.set_ylabel("held-out score of the final version")
    score.set_ylim(0, 1.05)
    calls.set_ylabel("Solver calls of the run")
    score.set_title("\n".join(textwrap.fill(line, 90) for line in title.splitlines()),
                    fontsize=9)  # a long model name is wrapped, not cut at the edge
    score.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
