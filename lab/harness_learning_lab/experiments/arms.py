"""The trained-Proposer table: each arm's single-step edits of the seed on held-out types.

Read from the logs alone (like `report`): an arm's run holds N edits of the seed, each tested
when valid. A candidate's score is its harness's test mean; an invalid edit scores 0 (the paper's
reward gives it nothing, and there is no harness to run). Per run the arm's value is the mean over
its candidates, the oracle's the best of them (chosen by test score: an upper bound, never a
method). Per seed the values are averaged over the held-out types; the table gives the mean over
seeds with a 95% t-interval. The seed and the fixed tool loop are deterministic (greedy Solver):
one run each, no interval.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_learning.evals.stats import ci95
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning_lab.experiments.collect import run_dirs
from harness_learning_lab.experiments.runner import RUN_EVENT
from harness_learning_lab.experiments.stages import ARMS

TABLE_MD, TABLE_JSON, PLOT = "proposer_table.md", "proposer_table.json", "proposer_arms.png"
LABELS = {"seed": "seed harness", "tool_loop": "fixed tool loop", "base": "base student",
          "sft": "SFT student", "sft_rl": "SFT+RL student", "teacher": "teacher",
          "oracle": "best-of-N oracle"}


@dataclass
class ArmRun:
    arm: str
    task: str
    seed: int
    scores: list[float]
    """One per candidate (invalid = 0); a baseline has its seed version's score alone."""
    valid: int
    proposals: int


def read_arm_run(run_dir: Path) -> ArmRun | None:
    store = SQLiteLogStore(run_dir, read_only=True)
    try:
        events = list(store.iter_events(kinds=[RUN_EVENT]))
        if not events or events[-1].payload.get("method") not in ARMS:
            return None
        meta = events[-1].payload
        tests: dict[str, list[float]] = defaultdict(list)
        for ev in store.iter_evaluations(purpose="test"):
            if ev.result.score is not None:
                tests[ev.sha].append(ev.result.score)
        mean = {sha: statistics.fmean(v) for sha, v in tests.items()}
        proposals = list(store.iter_proposals())
        if meta["method"] in ("seed", "tool_loop"):
            lineage = store.lineage()
            scores = [mean[lineage[0].sha]] if lineage and lineage[0].sha in mean else []
        else:
            scores = [mean.get(p.candidate_sha, 0.0) if p.valid and p.candidate_sha else 0.0
                      for p in proposals]
        return ArmRun(meta["method"], meta["task"], int(meta["seed"]), scores,
                      sum(p.valid for p in proposals), len(proposals))
    finally:
        store.close()


def arm_runs(out: Path, oracle_of: str) -> list[ArmRun]:
    """Every finished arm run, plus the oracle's (the best candidate of `oracle_of`'s runs)."""
    runs = [r for d in run_dirs(out) if (r := read_arm_run(d)) is not None and r.scores]
    runs += [ArmRun("oracle", r.task, r.seed, [max(r.scores)], r.valid, r.proposals)
             for r in runs if r.arm == oracle_of]
    return runs


def summarise(runs: list[ArmRun], tasks: list[str]) -> dict[str, Any]:
    """Per arm: mean and ci95 over seeds of the per-type mean, per type likewise, valid and
    zero-score rates over all its candidates."""
    by_arm: dict[str, list[ArmRun]] = defaultdict(list)
    for r in runs:
        by_arm[r.arm].append(r)
    table: dict[str, Any] = {}
    for arm in ARMS:
        mine = by_arm.get(arm)
        if not mine:
            continue
        value = {(r.task, r.seed): statistics.fmean(r.scores) for r in mine}
        seeds = sorted({s for _, s in value})
        complete = [s for s in seeds if all((t, s) in value for t in tasks)]
        per_seed = [statistics.fmean(value[t, s] for t in tasks) for s in complete]
        candidates = [x for r in mine for x in r.scores]
        proposals = sum(r.proposals for r in mine)
        table[arm] = {
            "label": LABELS[arm], "mean": statistics.fmean(per_seed) if per_seed else None,
            "ci95": ci95(per_seed), "n_seeds": len(per_seed),
            "per_type": {t: {"mean": statistics.fmean(v) if (v := [
                value[t, s] for s in seeds if (t, s) in value]) else None, "ci95": ci95(v)}
                for t in tasks},
            "valid_rate": (sum(r.valid for r in mine) / proposals) if proposals else None,
            "zero_rate": sum(x == 0 for x in candidates) / len(candidates),
            "edits": proposals}
    return table


def targets(table: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, each with the numbers it compares."""
    rl, base, teacher = table.get("sft_rl"), table.get("base"), table.get("teacher")
    out: dict[str, Any] = {}
    if rl and base:
        vr, vb = rl["valid_rate"] or 0.0, base["valid_rate"] or 0.0
        out["valid_rate_3x_base"] = {"sft_rl": vr, "base": vb, "holds": vr >= 3 * vb and vr > 0}
        out["mean_at_least_base"] = {"sft_rl": rl["mean"], "base": base["mean"],
                                     "holds": (rl["mean"] or 0) >= (base["mean"] or 0)}
    if rl and teacher:
        out["beats_teacher"] = {"sft_rl": rl["mean"], "teacher": teacher["mean"],
                                "holds": (rl["mean"] or 0) > (teacher["mean"] or 0)}
    return out


def fmt(mean: float | None, ci: float | None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.3f}" + (f" ± {ci:.3f}" if ci is not None else "")


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def markdown(table: dict[str, Any], tasks: list[str], goals: dict[str, Any],
             note: str) -> str:
    head = ["arm", "mean (95% CI)", "seeds", *tasks, "valid edits", "zero-score", "edits"]
    lines = ["## Trained Proposer: single-step edits on held-out types", "", note, "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for arm, row in table.items():
        cells = [row["label"], fmt(row["mean"], row["ci95"]), str(row["n_seeds"]),
                 *[fmt(row["per_type"][t]["mean"], row["per_type"][t]["ci95"]) for t in tasks],
                 pct(row["valid_rate"]) if arm not in ("seed", "tool_loop") else "-",
                 pct(row["zero_rate"]), str(row["edits"]) if row["edits"] else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Targets:"]
    for name, goal in goals.items():
        nums = ", ".join(f"{k} {v:.3f}" for k, v in goal.items()
                         if k != "holds" and v is not None)
        lines.append(f"- {name}: {'holds' if goal['holds'] else 'does not hold'} ({nums})")
    return "\n".join(lines) + "\n"


def plot(table: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [a for a, row in table.items() if row["mean"] is not None]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar(range(len(arms)), [table[a]["mean"] for a in arms],
           yerr=[table[a]["ci95"] or 0.0 for a in arms], capsize=4,
           color=["#999" if a in ("seed", "tool_loop", "oracle") else "#4477aa" for a in arms])
    ax.set_xticks(range(len(arms)), [LABELS[a] for a in arms], rotation=25, ha="right")
    ax.set_ylabel("held-out test score")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_arms(out: str | Path) -> dict[str, Any] | None:
    """Write the table (markdown, JSON) and its plot; None when the experiment has no arms."""
    out = Path(out)
    spec_file = out / "experiment.json"
    if not spec_file.is_file():
        return None
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    if not spec.get("training"):
        return None
    from harness_learning_lab.experiments.stages import TrainingSpec

    train = TrainingSpec.from_dict(spec["training"])
    tasks = list(spec["tasks"]["test"])
    table = summarise(arm_runs(out, train.oracle_of), tasks)
    goals = targets(table)
    note = (f"Held-out types: {', '.join(tasks)}; training types: "
            f"{', '.join(spec['tasks']['train'])}. Each student arm makes {train.eval_candidates} "
            f"single-step edits of the seed per type and seed, the teacher "
            f"{train.teacher_candidates}; an invalid edit scores 0. Mean over types per seed, "
            f"then mean ± 95% t-interval over seeds. Oracle: the best of "
            f"{LABELS[train.oracle_of]}'s edits by test score (uses test labels: an upper "
            "bound). Seed and tool loop are deterministic: one run.")
    (out / TABLE_MD).write_text(markdown(table, tasks, goals, note), encoding="utf-8")
    (out / TABLE_JSON).write_text(json.dumps({"arms": table, "targets": goals,
                                              "tasks": tasks}, indent=1), encoding="utf-8")
    plot(table, out / PLOT, f"Held-out single-step score by Proposer ({spec['name']}, "
         f"{len(tasks)} types)")
    return {"arms": table, "targets": goals}


def last_line(result: dict[str, Any]) -> dict[str, Any]:
    """What `experiment --json` prints last: per arm mean, ci95, valid_rate."""
    return {arm: {k: row[k] for k in ("mean", "ci95", "valid_rate")}
            for arm, row in result["arms"].items()}

