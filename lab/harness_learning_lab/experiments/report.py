"""The experiment report: markdown tables and per-round curves, rebuilt from the logs alone.

`write_report(OUT)` reads every finished run under `OUT/runs` (see `collect`) and writes
`OUT/report.md` and `OUT/curves.png`; running it again over the same logs gives the same text.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from harness_learning_lab.experiments.collect import RunRecord, collect
from harness_learning_lab.experiments.structure import DETECTORS, share

ORDER = ("seed", "tool_loop", "untrained", "trained", "single_step", "relay", "train_logs")
ADAPTIVE = ("untrained", "trained", "single_step", "relay")
NOT_TRAINED = ("not trained: the config names no `trained_proposer` (train one with "
               "`harness-learn train grpo-offline --logs OUT/runs/*/train_logs/*`)")
REPORT, CURVES = "report.md", "curves.png"


def label(method: str, runs: list[RunRecord]) -> str:
    if not runs:
        return method.replace("_", " ") if method != "trained" else "trained Proposer"
    m = runs[0].meta
    shape = f"{m.get('candidates')} cand x {m.get('rounds')} rounds, {m.get('policy')}"
    return {"seed": "seed harness (no adaptation)",
            "tool_loop": "fixed tool loop (baseline_tool_loop)",
            "untrained": f"untrained Proposer ({shape})",
            "trained": f"trained Proposer `{m.get('proposer', '')}` ({shape})",
            "single_step": f"single-step ({shape})",
            "relay": f"relay ({shape})",
            "train_logs": f"training-log runs ({shape})"}.get(method, method)


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.3f} (n=1)"
    return f"{mean:.3f} ± {statistics.stdev(values):.3f} (n={len(values)})"


def per_seed(runs: Iterable[RunRecord], tasks: set[str], value=lambda r: r.final) -> list[float]:
    """Per seed, the mean over `tasks` of `value`; seeds missing a task are left out."""
    by_seed: dict[int, dict[str, float]] = defaultdict(dict)
    for r in runs:
        if r.meta["task"] in tasks and value(r) is not None:
            by_seed[r.meta["seed"]][r.meta["task"]] = value(r)
    return [statistics.fmean(v.values()) for _, v in sorted(by_seed.items()) if set(v) == tasks]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def scores_section(by: dict[str, list[RunRecord]], tasks: list[str], hard: set[str]) -> list[str]:
    header = ["method", "all test types", "hard subset", *tasks]
    rows = []
    for method in ORDER[:4]:
        runs = by.get(method, [])
        if not runs:
            if method == "trained":
                rows.append([label(method, runs), NOT_TRAINED, "", *[""] * len(tasks)])
            continue
        rows.append([label(method, runs), spread(per_seed(runs, set(tasks))),
                     spread(per_seed(runs, hard)) if hard else "-",
                     *[spread(per_seed(runs, {t})) for t in tasks]])
    return ["## Held-out test score", "",
            "Final adopted version on the test problems (exact match; mean over test types per "
            "seed, then mean ± sample sd over seeds). Baselines are deterministic: one run.", "",
            *table(header, rows), ""]


def compare_section(by: dict[str, list[RunRecord]], tasks: list[str]) -> list[str]:
    single = by.get("single_step", [])
    if not single:
        return []
    n = single[0].meta["candidates"]
    relay = by.get("relay") or [r for r in by.get("untrained", [])
                                if r.meta["rounds"] == n and r.meta["candidates"] == 1]
    edits = sum(r.edits for r in single)
    beat = sum(r.edits_beating_parent for r in single)
    valid = sum(r.valid_edits for r in single)
    rows = [[f"single-step: 1 round x {n} candidates", spread(per_seed(single, set(tasks))),
             f"{beat}/{edits}" + (f" = {beat / edits:.0%}" if edits else ""),
             f"{valid}/{edits}"],
            [f"relay: {n} rounds x 1 candidate", spread(per_seed(relay, set(tasks))) if relay
             else "not run", "-", f"{sum(r.valid_edits for r in relay)}/"
             f"{sum(r.edits for r in relay)}"]]
    return ["## Single-step against relay at matched candidate counts", "",
            f"N = {n} Proposer samples each. 'Beat the seed': valid single-step edits whose "
            "selection score is strictly above the seed's on the same selection problems.", "",
            *table(["method", "test score", "edits that beat the seed", "valid edits"], rows), ""]


def oracle_section(by: dict[str, list[RunRecord]], tasks: list[str]) -> list[str]:
    rows = [[label(m, by[m]), spread(per_seed(by[m], set(tasks))),
             spread(per_seed(by[m], set(tasks), lambda r: r.oracle))]
            for m in ADAPTIVE if by.get(m)]
    return ["## Post-hoc best round (oracle, not a method)", "",
            "ORACLE: the round whose version scored best *on the test problems*, chosen after "
            "the fact. It uses test labels to choose, so it is an upper bound, never a result.", "",
            *table(["method", "final version (fair)", "post-hoc best (oracle)"], rows), ""]


def structure_section(by: dict[str, list[RunRecord]]) -> list[str]:
    rows = []
    for method in ORDER:
        runs = by.get(method, [])
        if not runs or method == "train_logs":
            continue
        if method in ("seed", "tool_loop"):
            found = [r.seed_structure for r in runs if r.seed_structure is not None][:1]
            hops = [found[0].search_hops] if found else []
        else:
            found = [s for r in runs for s in r.adopted]
            hops = [r.seed_structure.search_hops if r.seed_structure else 0
                    for r in runs for _ in r.adopted]
        shares = share(found, hops)
        rows.append([label(method, runs), str(len(found)),
                     *["-" if shares[d] is None else f"{shares[d]:.0%}" for d in DETECTORS]])
    return ["## Program structure of adopted versions", "",
            "Static analysis of each distinct adopted version's source (lab/harness_learning_lab/experiments/"
            "structure.py documents each rule); baselines show their own program.", "",
            *table(["method", "versions", "answers from raw passages", "adds a retrieval hop",
                    "searches again when the draft is absent", "Solver-written code loop"], rows),
            ""]


def cost_section(by: dict[str, list[RunRecord]]) -> list[str]:
    rows = []
    keys = ("solver_calls", "solver_tokens", "proposer_calls", "proposer_tokens")
    for method in ORDER:
        runs = by.get(method, [])
        if runs:
            rows.append([label(method, runs), str(len(runs)),
                         *[str(sum(r.spent.get(k, 0) for r in runs)) for k in keys],
                         f"{sum(r.meta.get('wall_s', 0.0) for r in runs):.1f}"])
    return ["## Cost", "", *table(["method", "runs", "Solver calls", "Solver tokens",
                                   "Proposer calls", "Proposer tokens", "wall time (s)"], rows), ""]


def curve_points(runs: list[RunRecord]) -> list[tuple[int, float]]:
    by_round: dict[int, list[float]] = defaultdict(list)
    for r in runs:
        for round_, score in r.curve:
            if score is not None:
                by_round[round_].append(score)
    return [(k, statistics.fmean(v)) for k, v in sorted(by_round.items())]


def curves_section(by: dict[str, list[RunRecord]]) -> list[str]:
    series = {m: curve_points(by[m]) for m in ADAPTIVE if by.get(m)}
    if not series:
        return []
    rounds = sorted({k for pts in series.values() for k, _ in pts})
    rows = [[label(m, by[m]), *[next((f"{s:.3f}" for k, s in pts if k == x), "-")
                                for x in rounds]] for m, pts in series.items()]
    return ["## Per-round test score", "", f"![per-round test score]({CURVES})", "",
            "Mean test score of the version in force after each round (round 0 = the seed), "
            "over test types and seeds.", "",
            *table(["method", *[f"round {x}" for x in rounds]], rows), ""]


def render(out: str | Path) -> str:
    records, unfinished = collect(out)
    by: dict[str, list[RunRecord]] = defaultdict(list)
    for r in records:
        by[r.method].append(r)
    tested = [r for r in records if r.method != "train_logs"]
    tasks = sorted({r.meta["task"] for r in tested})
    hard = {r.meta["task"] for r in tested if r.meta.get("hard")}
    first = records[0].meta if records else {}
    lines = [f"# Experiment `{first.get('experiment', '?')}`: {first.get('track', '?')} track, "
             f"{first.get('scale', '?')} scale", "",
             f"{len(records)} finished run(s); test types: {', '.join(tasks) or '-'}; "
             f"hard subset: {', '.join(sorted(hard)) or '-'}; seeds: "
             f"{sorted({r.meta['seed'] for r in records})}.", ""]
    if unfinished:
        lines += [f"Unfinished (left out): {', '.join(unfinished)}", ""]
    for task in tasks:
        seeds = {r.seed_sha for r in tested if r.meta["task"] == task and r.method != "tool_loop"}
        if len(seeds) > 1:
            lines += [f"WARNING: the runs on {task} started from {len(seeds)} different seed "
                      f"sources ({', '.join(sorted(s[:12] for s in seeds if s))}): the seed "
                      "harness file changed between runs, so their rows are not comparable.", ""]
    lines += scores_section(by, tasks, hard) + compare_section(by, tasks)
    lines += oracle_section(by, tasks) + curves_section(by)
    lines += structure_section(by) + cost_section(by)
    return "\n".join(lines)


def write_report(out: str | Path) -> Path:
    """Write OUT/report.md and OUT/curves.png from the logs; returns the report's path."""
    out = Path(out)
    text = render(out)
    records, _ = collect(out)
    by: dict[str, list[RunRecord]] = defaultdict(list)
    for r in records:
        by[r.method].append(r)
    plot({m: curve_points(by[m]) for m in ADAPTIVE if by.get(m)}, out / CURVES)
    from harness_learning_lab.experiments.arms import TABLE_MD, write_arms

    if write_arms(out) is not None:  # a trained-Proposer experiment: its table first
        text = (out / TABLE_MD).read_text(encoding="utf-8") + "\n" + text
    path = out / REPORT
    path.write_text(text + "\n", encoding="utf-8")
    return path


def plot(series: dict[str, list[tuple[int, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for method, pts in series.items():
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=method)
    ax.set_xlabel("round (0 = seed)")
    ax.set_ylabel("test score")
    ax.set_ylim(-0.02, 1.02)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    if series:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
