"""`harness-learn bench qa-relay`: the paper's QA finding at CPU scale. A relay of rounds
(`best_valid`, each round one Proposer edit and one operator candidate) against single-step
edits (the same number of candidates in one round from the seed), on multi-hop QA tasks whose
seed has a floor to move, selected on token F1, tested on held-out questions with exact match
and F1.

Per task, three runs under `OUT/runs/<task>/<arm>` (`seed`: the seed harness tested only;
`single_step`; `relay`), each run by the experiment runner (`experiments.runner.execute`): a
killed run resumes where it stopped, a finished one is never redone, and every version of each
adopted chain is tested on the same held-out questions. The figures are read from the logs:
per arm EM and F1 with paired bootstrap 95% intervals against the seed and between the relay
and single-step, where each adopted change came from, whether the gain needs two blocks
stacked, and how much of the relay's gain its first round gave (the paper: a third to two
thirds). Settings: `experiments/qa/relay.toml` (`[smoke]` for a run of minutes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness_learning_lab import checkout
from harness_learning_lab.scaled_toml import at_scale, read_toml

Log = Callable[[str], None]
SETTINGS = checkout() / "experiments" / "qa" / "relay.toml"
ARMS = ("seed", "single_step", "relay")


def load_settings(path: Path = SETTINGS, smoke: bool = False) -> dict[str, Any]:
    """The file's top level, or with its `[smoke]` table on top."""
    return at_scale(read_toml(path, "qa-relay settings"), ("smoke",), "smoke" if smoke else None,
                    path)


def task_options(settings: dict[str, Any], out: Path, task: str) -> dict[str, Any]:
    """The task on its closed sample corpus (`qa_floor.sample_index`), scored on `score_by`
    for selection."""
    from harness_learning_lab.bench.qa_floor import sample_index

    return {"n_dev": settings["n_dev"], "n_test": settings["n_test"], "seed": 0,
            "index_dir": str(sample_index(task, out)), "score_by": settings["score_by"]}


def plans(settings: dict[str, Any], out: Path, options: Callable[[str], dict]) -> list[Any]:
    """Per task: the seed tested, then single-step (1 round of `rounds` Proposer edits and as
    many operator candidates), then the relay (`rounds` rounds of one of each)."""
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning_lab.experiments.runner import RunPlan

    n = settings["rounds"]

    def config(task: str, arm: str, **shape: Any) -> AdaptConfig:
        return AdaptConfig(
            task=task, run_dir=str(out / "runs" / task / arm), task_options=options(task),
            solver=settings["solver"], proposer=settings["proposer"], seed=settings["seed"],
            solver_params={"temperature": 0.0, "max_tokens": settings["solver_max_tokens"]},
            proposer_params={"temperature": 0.7, "max_tokens": settings["proposer_max_tokens"]},
            policy="best_valid", split="held_out", feedback=settings["feedback"],
            selection=settings["selection"], operators=settings["operators"],
            edit_format=settings["edit_format"], repair_turns=settings["repair_turns"],
            concurrency=settings["concurrency"], **shape)

    out_plans = []
    for task in settings["tasks"]:
        out_plans += [
            RunPlan("seed", task, settings["seed"], config(task, "seed", rounds=0),
                    eval_only=True),
            RunPlan("single_step", task, settings["seed"],
                    config(task, "single_step", rounds=1, candidates=n, operators_per_round=n)),
            RunPlan("relay", task, settings["seed"],
                    config(task, "relay", rounds=n, candidates=1, operators_per_round=1))]
    return out_plans


def run(settings: dict[str, Any], out: Path, log: Log = print) -> list[dict[str, Any]]:
    """Every run (resuming), then the figures."""
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning_lab.experiments.runner import execute

    out.mkdir(parents=True, exist_ok=True)
    cache: dict[str, dict] = {}

    def options(task: str) -> dict:
        if task not in cache:
            cache[task] = task_options(settings, out, task)
        return cache[task]

    planned = plans(settings, out, options)
    info = {"bench": "qa-relay", "rounds": settings["rounds"]}
    for i, plan in enumerate(planned, 1):
        log(f"[{i}/{len(planned)}] {plan.method} on {plan.task}")
        asyncio.run(execute(plan, info, AdapterContext, log))
    return [figures(settings, out, task, options(task)) for task in settings["tasks"]]


def interval(base: list[float], arm: list[float]) -> list[float]:
    """`arm`'s mean gain over `base` on the same questions with a bootstrap 95% interval
    (`bench blocks`' own): [mean, low, high]."""
    from harness_learning_lab.bench.blocks import paired_interval

    return [round(v, 3) for v in paired_interval(base, arm)]


def figures(settings: dict[str, Any], out: Path, task_name: str,
            options: dict[str, Any]) -> dict[str, Any]:
    """One task's figures from its three runs' logs."""
    from harness_learning.evals.registry import get_task

    task = get_task(task_name, **options)
    problems = task.test()
    arms = {arm: read_arm(out / "runs" / task_name / arm, task, problems) for arm in ARMS}
    result: dict[str, Any] = {"task": task_name, "n": len(problems), "arms": {}}
    seed = arms["seed"]
    for arm, read in arms.items():
        if read is None:
            continue
        row = {k: read[k] for k in ("origins", "stacked", "stack_gain", "solver_calls",
                                    "rounds")}
        row["em_mean"], row["f1_mean"] = (round(float(np.mean(read[k])), 3) for k in ("em", "f1"))
        if seed is not None and arm != "seed":
            for k in ("em", "f1"):
                row[f"{k}_gain"] = interval(seed[k], read[k])
        result["arms"][arm] = row
    relay, single = arms["relay"], arms["single_step"]
    if relay is not None and single is not None:
        result["relay_vs_single"] = {k: interval(single[k], relay[k]) for k in ("em", "f1")}
    if relay is not None and seed is not None:
        result["round1_share"] = round1_share(relay, seed, result["arms"]["relay"]["f1_gain"])
    return result


def read_arm(run_dir: Path, task: Any, problems: list) -> dict[str, Any] | None:
    """A finished run's adopted chain: per held-out problem EM and F1 of its final version (the
    task's own metrics on the stored answers), each round's version's F1 mean, where each
    adopted change came from; None while the run has not finished."""
    from harness_learning.harnesses.store import SQLiteLogStore
    from harness_learning_lab.experiments.runner import RUN_EVENT

    if not (run_dir / "log.sqlite").is_file():
        return None
    with SQLiteLogStore(run_dir, read_only=True) as store:
        if not any(True for _ in store.iter_events(kinds=[RUN_EVENT])):
            return None
        answers: dict[str, dict[str, Any]] = {}
        for ev in store.iter_evaluations(purpose="test"):
            answers.setdefault(ev.sha, {})[ev.result.problem_id] = ev.result.answer
        chain = store.lineage()
        origin = {p.candidate_sha: p.origin for p in store.iter_proposals() if p.candidate_sha}
        spent = store.spent()

    def metric(sha: str, key: str) -> list[float]:
        got = answers.get(sha, {})
        return [task.metrics(p, got.get(p.id))[key] for p in problems]

    final = chain[-1].sha
    steps = [(origin.get(step.sha, "?"), step.sha)
             for prev, step in zip(chain, chain[1:], strict=False) if step.sha != prev.sha]
    adopted = [o for o, _ in steps]
    operators = [(o, sha) for o, sha in steps if o.startswith("operator:")]
    stacked = len({o for o, _ in operators}) >= 2
    first_block = operators[0][1] if stacked else None
    return {"em": metric(final, "em"), "f1": metric(final, "f1"), "origins": adopted,
            "stacked": stacked,
            # what the blocks after the first add: the final version against the chain's
            # version with the first block alone, on the same questions
            "stack_gain": {k: interval(metric(first_block, k), metric(final, k))
                           for k in ("em", "f1")} if first_block else None,
            "rounds": [{"round": s.round, "sha": s.sha[:12],
                        "f1_mean": round(float(np.mean(metric(s.sha, "f1"))), 3)}
                       for s in chain],
            "solver_calls": spent.get("solver_calls", 0)}


def round1_share(relay: dict[str, Any], seed: dict[str, Any],
                 gain: list[float] | None = None) -> float | None:
    """The part of the relay's held-out F1 gain its first round's version already had; None
    without a gain to share: none, or one whose interval (`gain`, from `interval`) holds 0 (a
    share of a gain of 0.002 F1 read -17.5 on 2Wiki)."""
    rounds = relay["rounds"]
    start, final = float(np.mean(seed["f1"])), rounds[-1]["f1_mean"]
    first = next((r["f1_mean"] for r in rounds if r["round"] == 1), None)
    if first is None or final - start <= 0 or (gain is not None and gain[1] <= 0):
        return None
    return round((first - start) / (final - start), 3)


def _cell(gain: list[float] | None) -> str:
    return "-" if gain is None else f"{gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}]"


def _stacked(row: dict[str, Any]) -> str:
    """'no', or what the final version adds to F1 over the chain's version at its first
    operator block (the later blocks and edits), and whether the gain needs them (the
    interval above 0)."""
    gain = row.get("stack_gain")
    if not row["stacked"] or gain is None:
        return "no"
    needs = "needs both" if gain["f1"][1] > 0 else "the first alone is as good"
    return f"yes: F1 {_cell(gain['f1'])} over the chain at its first block ({needs})"


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| task | arm | n | EM | F1 | EM gain over seed [95% CI] | F1 gain over seed | "
             "adopted from | two blocks stacked | Solver calls |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for arm, row in r["arms"].items():
            lines.append(
                f"| {r['task']} | {arm} | {r['n']} | {row['em_mean']:.3f} | {row['f1_mean']:.3f} | "
                f"{_cell(row.get('em_gain'))} | {_cell(row.get('f1_gain'))} | "
                f"{', '.join(row['origins']) or '-'} | {_stacked(row)} | "
                f"{row['solver_calls']} |")
    lines += ["", "| task | relay - single-step EM [95% CI] | F1 | round 1's share of the "
              "relay's F1 gain (- where its interval holds 0) |", "|---|---|---|---|"]
    for r in results:
        vs = r.get("relay_vs_single") or {}
        share = r.get("round1_share")
        lines.append(f"| {r['task']} | {_cell(vs.get('em'))} | {_cell(vs.get('f1'))} | "
                     f"{'-' if share is None else f'{share:.2f}'} |")
    return "\n".join(lines)
