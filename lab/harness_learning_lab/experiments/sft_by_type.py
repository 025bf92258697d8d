"""The Proposer-SFT experiment per test type: each arm's adopted-program score (mean over seeds)
with its valid edits and distinct programs, as a table and a plot.

The pooled table (`sft_table`) answers the issue's questions; this one shows where the pooled
figures come from: a gain on one type, a collapse to one program, a base edit that solved the
task without the Solver.
"""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any

ARM_COLOURS = {"seed": "#9e9e9e", "base": "#4c72b0", "student": "#dd8452",
               "ceiling": "#55a868", "base_relay": "#8172b3", "student_relay": "#c44e52"}


def by_type(runs: list[Any], arms: tuple[str, ...]) -> dict[str, dict[str, dict[str, Any]]]:
    """type -> arm -> {score (mean over seeds of the adopted program's mean), seeds, valid,
    edits, distinct}; an arm with no finished run on a type is left out."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for run in runs:
        out.setdefault(run.task, {}).setdefault(run.arm, {"runs": []})["runs"].append(run)
    for arms_of in out.values():
        for arm, cell in list(arms_of.items()):
            mine = cell.pop("runs")
            per_seed = {r.seed: round(sum(r.scores.values()) / len(r.scores), 3)
                        for r in sorted(mine, key=lambda r: r.seed) if r.scores}
            arms_of[arm] = {"score": round(mean(per_seed.values()), 3) if per_seed else None,
                            "seeds": sorted(r.seed for r in mine), "per_seed": per_seed,
                            "valid": sum(r.valid for r in mine),
                            "edits": sum(r.edits for r in mine),
                            "distinct": sum(r.distinct for r in mine)}
        for arm in [a for a in arms_of if a not in arms]:
            del arms_of[arm]
    return out


def markdown(types: dict[str, dict[str, dict[str, Any]]], arms: tuple[str, ...],
             control: list[str]) -> str:
    """One row per type: each arm's score (valid/edits, distinct programs; seeds when not all)."""
    shown = [a for a in arms if any(a in row for row in types.values())]
    lines = ["| type | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    for task, row in types.items():
        cells = []
        for arm in shown:
            c = row.get(arm)
            if c is None or c["score"] is None:
                cells.append("-")
                continue
            detail = f" ({c['valid']}/{c['edits']}, {c['distinct']})" if c["edits"] else ""
            seeds = (" [" + " / ".join(f"{v:.2f}" for v in c["per_seed"].values()) + "]"
                     if len(c["per_seed"]) > 1 else "")
            cells.append(f"{c['score']:.3f}{seeds}{detail}")
        name = f"{task} (control)" if task in control else task
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "held-out score of the adopted program, mean over the seeds run [each seed's, "
              "when more than one]; (valid of edits, distinct programs among the valid ones)."]
    return "\n".join(lines) + "\n"


def plot(types: dict[str, dict[str, dict[str, Any]]], arms: tuple[str, ...], path: Path,
         title: str) -> Path:
    """Grouped bars: per type, each arm's adopted-program score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [a for a in arms if any(a in row for row in types.values())]
    names = list(types)
    width = 0.8 / max(1, len(shown))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(names) + 2), 4.2))
    for i, arm in enumerate(shown):
        xs = [k + (i - (len(shown) - 1) / 2) * width for k in range(len(names))]
        ys = [(types[t].get(arm) or {}).get("score") for t in names]
        bars = ax.bar([x for x, y in zip(xs, ys, strict=True) if y is not None],
                      [y for y in ys if y is not None], width, label=arm,
                      color=ARM_COLOURS.get(arm))
        ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=1)  # a 0 shows as a label
    ax.set_xticks(range(len(names)), [n.removeprefix("rg:") for n in names], fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("held-out score of the adopted program")
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=len(shown), loc="upper center", bbox_to_anchor=(0.5, -0.08),
              frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
