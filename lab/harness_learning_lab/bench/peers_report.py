"""Figures of `bench peers`: per system the final held-out score with a 95% interval over seeds,
Solver calls, Proposer calls (the mean and the fewest of any run: how many times each system
reflected or evolved at least), Proposer tokens and wall time; the anytime curves; the table
and the plot."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness_learning.evals.stats import ci95


def at(curve: list[dict], calls: float, key: str = "test") -> Any:
    """The held-out score (or another field, `key`) of what the run would hand back after
    `calls` Solver calls."""
    value = curve[0][key]
    for point in curve:
        if point["solver_calls"] <= calls:
            value = point[key]
    return value


def summarize(results: list[dict]) -> dict[str, Any]:
    """Per system: the mean over tasks of each seed, then mean and interval over seeds."""
    by: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by[r["system"]][r["seed"]].append(r)
    systems: dict[str, Any] = {}
    for system, seeds in by.items():
        per_seed = [statistics.mean(r["final_test"] for r in runs) for runs in seeds.values()]
        runs = [r for rs in seeds.values() for r in rs]
        tasks = defaultdict(list)
        for r in runs:
            tasks[r["task"]].append(r["final_test"])
        systems[system] = {
            "final_test": round(statistics.mean(per_seed), 4),
            "ci95": None if (c := ci95(per_seed)) is None else round(c, 4),
            "start_test": round(statistics.mean(r["curve"][0]["test"] for r in runs), 4),
            "solver_calls": round(statistics.mean(r["solver_calls"] for r in runs), 1),
            "budget": runs[0].get("budget"),
            "spent_within_10pct": sum(within_spend(r) for r in runs),
            "proposer_calls": round(statistics.mean(r["proposer_calls"] for r in runs), 1),
            "proposer_calls_min": min(r["proposer_calls"] for r in runs),
            "proposer_tokens": round(statistics.mean(r["proposer_tokens"] for r in runs)),
            # answers cut at the token cap, per run; None where a run predates the count
            "proposer_truncated": (None if any("proposer_truncated" not in r for r in runs)
                                   else round(statistics.mean(r["proposer_truncated"]
                                                              for r in runs), 1)),
            "wall_s": round(statistics.mean(r["wall_s"] for r in runs), 1),
            "runs": len(runs), "seeds": len(per_seed),
            "per_task": {t: round(statistics.mean(v), 4) for t, v in tasks.items()}}
    return systems


def within_spend(run: dict, tolerance: float = 0.10) -> bool:
    """The run spent its allowed Solver calls within `tolerance` (equal spend): a search that
    stopped well short of its budget (its proposals ran out first) did not."""
    budget = run.get("budget")
    return bool(budget) and abs(run["solver_calls"] - budget) <= tolerance * budget


def curves(results: list[dict], points: int = 40) -> dict[str, list[tuple[float, float]]]:
    """Mean held-out score against Solver calls, per system, on a shared grid."""
    top = max((r["solver_calls"] for r in results), default=0)
    grid = [top * i / points for i in range(points + 1)]
    by: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        by[r["system"]].append(r)
    return {s: [(x, statistics.mean(at(r["curve"], x) for r in runs)) for x in grid]
            for s, runs in by.items()}


def table(systems: dict[str, Any]) -> str:
    """Per system: held-out, start, Solver calls beside the calls allowed and how many runs
    spent them within 10% (equal spend), Proposer calls (mean, and the fewest of any run: each
    peer's reflections or iterations) and how many were cut at the token cap, tokens, wall
    time, runs."""
    lines = ["system              held-out (95% CI over seeds)   start   Solver calls / allowed"
             "  within 10%  Proposer calls (min/run)  cut at cap  Proposer tokens   wall s/run"
             "  runs",
             "------------------  ----------------------------  ------  ----------------------"
             "  ----------  ------------------------  ----------  ---------------  -----------"
             "  ----"]
    for name, s in systems.items():
        ci = "n/a (1 seed)" if s["ci95"] is None else f"+- {s['ci95']:.3f}"
        fewest = s.get("proposer_calls_min", "-")
        allowed = s.get("budget") or "-"
        within = f"{s.get('spent_within_10pct', '-')}/{s['runs']}"
        cut = s.get("proposer_truncated")
        cut = "-" if cut is None else f"{cut:.1f}"
        lines.append(f"{name:<18}  {s['final_test']:>6.3f} {ci:<21}  {s['start_test']:>6.3f}  "
                     f"{s['solver_calls']:>12.1f} / {allowed:<7}  {within:>10}  "
                     f"{s['proposer_calls']:>14.1f} ({fewest:>3})  {cut:>10}  "
                     f"{s['proposer_tokens']:>15,}  {s['wall_s']:>11.1f}  {s['runs']:>4}")
    tasks = sorted({t for s in systems.values() for t in s["per_task"]})
    lines.append("")
    lines.append("held-out by task   " + "  ".join(f"{t:>22}" for t in tasks))
    for name, s in systems.items():
        lines.append(f"{name:<18} " + "  ".join(cell(s["per_task"].get(t)) for t in tasks))
    return "\n".join(lines)


def markdown(systems: dict[str, Any]) -> str:
    """The table as Markdown, for a README: per system the held-out mean over tasks and seeds,
    each task's score (`-` where none finished), Solver calls beside the calls allowed and how
    many runs spent them within 10%, and Proposer calls per run (the fewest of any run)."""
    tasks = sorted({t for s in systems.values() for t in s["per_task"]})
    head = ["system", "held-out, mean over tasks and seeds", *tasks,
            "Solver calls per run / allowed", "within 10%", "Proposer calls per run (min)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in systems.items():
        per_task = [cell(s["per_task"].get(t)).strip() for t in tasks]
        lines.append("| " + " | ".join([
            f"`{name}`", f"{s['final_test']:.3f}", *per_task,
            f"{s['solver_calls']:.1f} / {s.get('budget') or '-'}",
            f"{s.get('spent_within_10pct', '-')}/{s['runs']}",
            f"{s['proposer_calls']:.1f} ({s.get('proposer_calls_min', '-')})"]) + " |")
    return "\n".join(lines)


def cell(score: float | None) -> str:
    """A task's held-out score, or `-` where the system has no finished run of it."""
    return f"{'-':>22}" if score is None else f"{score:>22.3f}"


def plot_title(results: list[dict], settings: dict[str, Any]) -> str:
    """The plot's title, counted from the runs it draws: a grid read part way (`--finished`)
    is titled by what it holds, not by what the settings plan."""
    tasks = len({r["task"] for r in results})
    seeds = len({r["seed"] for r in results})
    solver = settings.get("solver_model") or "SmolLM2"
    return (f"bench peers: {tasks} task(s) x {seeds} seed(s), {len(results)} runs, budget "
            f"{settings['budget']} Solver calls\n{solver} Solver, Qwen Proposer")


def plot(results: list[dict], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for system, curve in curves(results).items():
        ax.step([x for x, _ in curve], [y for _, y in curve], where="post", label=system)
    ax.set_xlabel("Solver calls spent by the search (counted at our Solver)")
    ax.set_ylabel("held-out score of the current best\n(mean over tasks and seeds)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
