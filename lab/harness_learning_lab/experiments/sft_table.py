"""The Proposer-SFT experiment's table, read from its arm runs' logs only.

Per arm, on held-out types and on control types apart:
- the valid rate of its edits;
- the share of valid edits that write a working inline loop (`code_loop.working_inline_loop`:
  the loop inline, and on a selection problem the Solver's program printed the answer), with a
  one-sided Fisher test of the student against the base, pooled over held-out types;
- the adopted program's test score: per (type, seed) the best valid edit on selection when it
  reaches the seed's selection score, else the seed; its mean, and a paired bootstrap 95%
  interval of its per-problem gain over the base arm's adopted program (the control row: over
  the seed);
- Solver and Proposer calls and wall time.
A relay arm's adopted program is the last version its chain adopted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning_lab.experiments import sft_by_type
from harness_learning_lab.experiments.code_loop import code_loop_form, working_inline_loop_in_log
from harness_learning_lab.experiments.runner import RUN_EVENT, slug

ARMS = ("seed", "base", "student", "ceiling", "base_relay", "student_relay")
TABLE = "sft_table"
BOOTSTRAP = 4000


@dataclass
class ArmRun:
    arm: str
    task: str
    seed: int
    edits: int = 0
    valid: int = 0
    distinct: int = 0
    """Distinct programs among the valid edits: a student that collapsed onto one answer
    writes the same program at every sample."""
    inline: int = 0
    """Valid edits writing a working inline loop."""
    loop: int = 0
    """Valid edits running Solver code in an error-feedback retry, in any form."""
    scores: dict[str, float] = field(default_factory=dict)
    """The adopted program's test score per problem."""
    spent: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    formats: list[str] = field(default_factory=list)


def _test_scores(store: SQLiteLogStore) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for ev in store.iter_evaluations(purpose="test"):
        out.setdefault(ev.sha, {})[ev.result.problem_id] = float(ev.result.score or 0.0)
    return out


def read_arm(run_dir: Path, arm: str, task: str, seed: int) -> ArmRun | None:
    """One finished arm run; None while it has not finished."""
    from harness_learning.training.data import as_messages
    from harness_learning.training.demonstrations import prompt_format

    if not (run_dir / "log.sqlite").is_file():
        return None
    store = SQLiteLogStore(run_dir, read_only=True)
    try:
        events = list(store.iter_events(kinds=[RUN_EVENT]))
        if not events:
            return None
        run = ArmRun(arm, task, seed, spent=store.spent(),
                     wall_s=float(events[-1].payload.get("wall_s", 0.0)))
        lineage, tests = store.lineage(), _test_scores(store)
        adopted = lineage[-1].sha if lineage else None
        proposals = list(store.iter_proposals())
        valid = [p for p in proposals if p.valid and p.candidate_sha]
        run.edits, run.valid = len(proposals), len(valid)
        run.distinct = len({p.candidate_sha for p in valid})
        for p in valid:
            source = store.get_version_source(p.candidate_sha)
            found = code_loop_form(source, p.origin)
            run.loop += found is not None and found.form is not None
            run.inline += working_inline_loop_in_log(store, p.candidate_sha)
        run.formats = sorted({prompt_format(as_messages(p.prompt)) for p in proposals
                              if p.origin == "proposer" and p.prompt})
        if not arm.endswith("_relay") and lineage:
            adopted = _best_on_selection(valid, lineage[0].sha)
        run.scores = tests.get(adopted, {}) if adopted else {}
        return run
    finally:
        store.close()


def _best_on_selection(valid: list[Any], seed_sha: str) -> str:
    scored = [p for p in valid if p.selection_score is not None]
    if not scored:
        return seed_sha
    best = max(scored, key=lambda p: float(p.selection_score))
    if best.parent_score is not None and float(best.selection_score) < float(best.parent_score):
        return seed_sha
    return best.candidate_sha


def paired(base: list[ArmRun], arm: list[ArmRun], seed: int = 0) -> dict[str, Any] | None:
    """Mean per-problem gain of `arm`'s adopted programs over `base`'s on the same (type, seed,
    problem), with a bootstrap 95% interval; None when nothing pairs."""
    import numpy as np

    by = {(r.task, r.seed): r.scores for r in base}
    diffs = [score - by[(r.task, r.seed)][pid] for r in arm if (r.task, r.seed) in by
             for pid, score in r.scores.items() if pid in by[(r.task, r.seed)]]
    if not diffs:
        return None
    d = np.asarray(diffs)
    means = d[np.random.default_rng(seed).integers(0, len(d), (BOOTSTRAP, len(d)))].mean(axis=1)
    return {"gain": round(float(d.mean()), 3), "ci95": [round(float(np.quantile(means, 0.025)), 3),
                                                        round(float(np.quantile(means, 0.975)), 3)],
            "n": len(diffs)}


def summarise(runs: list[ArmRun]) -> dict[str, Any]:
    edits, valid, inline = (sum(getattr(r, k) for r in runs) for k in ("edits", "valid", "inline"))
    scored = [sum(r.scores.values()) / len(r.scores) for r in runs if r.scores]
    return {"runs": len(runs), "edits": edits, "valid": valid, "inline": inline,
            "distinct": sum(r.distinct for r in runs),
            "loop": sum(r.loop for r in runs),
            "valid_rate": round(valid / edits, 3) if edits else None,
            "inline_share": round(inline / valid, 3) if valid else None,
            "score": round(sum(scored) / len(scored), 3) if scored else None,
            "solver_calls": sum(r.spent.get("solver_calls", 0) for r in runs),
            "proposer_calls": sum(r.spent.get("proposer_calls", 0) for r in runs),
            "wall_s": round(sum(r.wall_s for r in runs), 1)}


def table(runs: list[ArmRun], heldout: list[str], control: list[str]) -> dict[str, Any]:
    from harness_learning.evals.guards import fisher_greater

    out: dict[str, Any] = {"heldout_types": heldout, "control_types": control, "arms": {}}
    for group, types in (("heldout", heldout), ("control", control)):
        rows = {arm: [r for r in runs if r.arm == arm and r.task in types] for arm in ARMS}
        for arm, mine in rows.items():
            if mine:
                out["arms"].setdefault(arm, {})[group] = summarise(mine)
        against = rows["seed"] if group == "control" else rows["base"]
        for arm in ("student", "ceiling", "base"):
            entry = out["arms"].get(arm, {}).get(group)
            if entry is not None and arm != ("seed" if group == "control" else "base"):
                entry["vs_" + ("seed" if group == "control" else "base")] = paired(
                    against, rows[arm])
    student, base = (out["arms"].get(a, {}).get("heldout") for a in ("student", "base"))
    if student and base and student["valid"] and base["valid"]:
        student["fisher_p_inline"] = round(fisher_greater(
            student["inline"], student["valid"], base["inline"], base["valid"]), 4)
    out["formats"] = sorted({f for r in runs for f in r.formats})
    return out


def markdown(result: dict[str, Any], spec: Any, stages: dict[str, Any]) -> str:
    def cell(v: Any) -> str:
        return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    done, planned = result.get("finished", [None, None])
    partial = f" ({done} of {planned} runs finished)" if done != planned else ""
    lines = [f"# {spec.name} ({spec.scale}){partial}", "",
             f"held-out: {', '.join(spec.heldout_types)}; control: "
             f"{', '.join(spec.control_types) or 'none'}; training: {', '.join(spec.train_types)}",
             "", "| arm | types | valid | distinct | valid rate | working inline | share | score | gain "
             "[95% CI] | Fisher p | Solver calls | Proposer calls | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for arm, groups in result["arms"].items():
        for group, s in groups.items():
            vs = s.get("vs_base") or s.get("vs_seed")
            gain = f"{vs['gain']:+.3f} [{vs['ci95'][0]:+.3f}, {vs['ci95'][1]:+.3f}]" if vs else "-"
            lines.append(f"| {arm} | {group} | {s['valid']}/{s['edits']} | {s['distinct']} | "
                         f"{cell(s['valid_rate'])}"
                         f" | {s['inline']} | {cell(s['inline_share'])} | {cell(s['score'])} | "
                         f"{gain} | {cell(s.get('fisher_p_inline'))} | {s['solver_calls']} | "
                         f"{s['proposer_calls']} | {s['wall_s']} |")
    lines += ["", "distinct: different programs among the valid edits (summed over runs); "
              "gain: against the base arm's adopted programs (control rows: against the "
              "seed); Fisher: one-sided, student's working-inline share above the base's.", "",
              "| stage | wall s | CPU s | load (1 min) | result |", "|---|---|---|---|---|"]
    for name, st in stages.items():
        r = st.get("result", {})
        what = _stage_result(name, r)
        lines.append(f"| {name} | {st.get('wall_s')} | {r.get('cpu_s')} | "
                     f"{r.get('load_avg_1m')} | {what} |")
    return "\n".join(lines) + "\n"


def _stage_result(name: str, r: dict[str, Any]) -> str:
    if name == "collect":
        return f"{len(r.get('run_dirs', []))} runs"
    if name == "demonstrations":
        prompt = r.get("tokens", {}).get("prompt", {})
        ties = " (ties with the parent kept: smoke)" if r.get("ties_kept") else ""
        return r.get("skipped") or (f"{r.get('rows')} rows{ties}, prompt tokens mean "
                                    f"{prompt.get('mean')} max {prompt.get('max')}")
    if name == "sft":
        return r.get("skipped") or (f"loss {r.get('summary', {}).get('loss')}, "
                                    f"{r.get('s_per_step')} s/step")
    return "student trained" if r.get("student_trained") else "student = base"


def planned_runs(spec: Any) -> int:
    """How many arm runs `spec` plans (`sft_run.arm_plans` lists them): every single-step arm
    on each type and seed, and the relays on the first `relay_seeds` seeds."""
    single = sum(not a.endswith("_relay") for a in ARMS) * len(spec.seeds)
    relay_seeds = min(spec.relay_seeds, len(spec.seeds))
    relays = sum(a.endswith("_relay") for a in ARMS) * relay_seeds if spec.relay_rounds else 0
    return len(spec.test_types) * (single + relays)


def write_table(out: Path, spec: Any) -> dict[str, Any]:
    """OUT/sft_table.json and .md from the finished arm runs of `spec`'s test types."""
    runs = [run for task in spec.test_types for arm in ARMS for seed in spec.seeds
            if (run := read_arm(out / "runs" / slug(task) / arm / f"seed{seed}", arm, task,
                                seed)) is not None]
    result = table(runs, spec.heldout_types, spec.control_types)
    result["finished"] = [len(runs), planned_runs(spec)]
    stages = {p.parent.name: json.loads(p.read_text()) for p in
              sorted((out / "stages").glob("*/stage.json"), key=lambda p: p.stat().st_mtime)}
    demo_format = stages.get("demonstrations", {}).get("result", {}).get(
        "summary", {}).get("prompt_format")
    result["demonstrations_format"] = demo_format
    result["same_prompt_format"] = (None if not demo_format or not result["formats"]
                                    else result["formats"] == [demo_format])
    result["by_type"] = types = sft_by_type.by_type(runs, ARMS)
    (out / f"{TABLE}.json").write_text(json.dumps(result, indent=1))
    text = markdown(result, spec, stages) + (
        f"\nprompt format of the demonstrations {demo_format or '-'}; of the arms' prompts "
        f"{', '.join(result['formats']) or '-'}\n")
    if types:
        done, planned = result["finished"]
        figure = sft_by_type.plot(types, ARMS, out / f"{TABLE}.png", (
            f"{spec.name}: held-out score of the adopted program by type and arm "
            f"({done} of {planned} runs)"))
        text += "\n## By type\n\n" + sft_by_type.markdown(
            types, ARMS, spec.control_types) + f"\nplot: {figure}\n"
    (out / f"{TABLE}.md").write_text(text)
    result["markdown"] = text
    return result
