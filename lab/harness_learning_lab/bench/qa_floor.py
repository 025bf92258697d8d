"""`bench qa-floor`: how well the QA seed does at this scale, how long it takes, and where it loses.

Before any QA change can be measured, the seed (`multihop_two_hop`) needs a floor it can be
measured against: the exact match and token F1 the Solver earns on each task's closed sample
corpus (`evals.samples.SAMPLE_CORPORA`, so every question is answerable from the index), the
seconds a problem costs (what every larger QA run is sized from), and, from each problem's
trace, the stage at which a wrong answer was lost (`qa_floor_failures`).

Each finished problem is written to `OUT/<task>/<problem>.json` as it ends (its result with the
whole trace, its metrics and its gold), so a killed run loses at most the problems in flight and
a rerun runs only the rest; the report is recomputed from those files each time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness_learning_lab.bench.qa_floor_failures import (
    STAGES,
    failure_stage,
    gold_recall,
    repeats_a_query,
)

TASKS = ("2wiki", "hotpotqa", "musique")
BOOTSTRAP = 2000
Log = Callable[[str], None]


def record_path(out: Path, task: str, problem_id: str) -> Path:
    """The problem's file: its id made file-safe, with a short hash so two ids that differ only
    in unsafe characters never share one."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", problem_id)[:60]
    digest = hashlib.sha1(problem_id.encode()).hexdigest()[:8]
    return out / task / f"{safe}-{digest}.json"


def sample_index(name: str, out: Path) -> Path:
    """The BM25 index of task `name`'s closed sample corpus, built once into `OUT/indexes`
    and shared by every bench run that writes to `out`."""
    from harness_learning import retrieval
    from harness_learning.evals.samples import SAMPLE_CORPORA, data_dir

    kind, corpus = SAMPLE_CORPORA[name]
    index = out / "indexes" / name
    if not (index / "manifest.json").exists():
        retrieval.build_index(kind, data_dir() / corpus, index, progress=False, workers=1)
    return index


def task_with_index(name: str, out: Path, n: int) -> Any:
    """The task on its closed sample corpus (`sample_index`). `n_test=n` with the default dev
    size picks the same held-out problems as `bench blocks`."""
    from harness_learning.evals.registry import get_task

    return get_task(name, n_test=n, seed=0, index_dir=str(sample_index(name, out)))


def record(task: Any, problem: Any, result: Any) -> dict[str, Any]:
    """What is kept per problem: the result with its trace, both metrics, and the gold."""
    metrics = task.metrics(problem, result.answer) if result.completed else {"em": 0.0, "f1": 0.0}
    return {"task": task.name, "problem_id": problem.id, "question": problem.inputs.get("question"),
            "gold": list(problem.gold), "type": problem.meta.get("type"),
            "supporting_titles": list(problem.meta.get("supporting_titles") or []),
            "em": metrics["em"], "f1": metrics["f1"], "result": result.to_dict()}


async def run_task(name: str, n: int, out: Path, solver: str, params: dict[str, Any],
                   concurrency: int, log: Log) -> None:
    """The seed on the first `n` held-out problems not yet on disk, each written as it ends."""
    from harness_learning.evals.evaluator import evaluate
    from harness_learning.harnesses.llm import get_client
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.toolbox import Toolbox

    task = task_with_index(name, out, n)
    problems = task.test()[:n]
    todo = [p for p in problems if not record_path(out, name, p.id).exists()]
    log(f"{name}: {len(problems) - len(todo)} of {len(problems)} done, {len(todo)} to run")
    if not todo:
        return
    (out / name).mkdir(parents=True, exist_ok=True)
    by_id = {p.id: p for p in todo}
    toolbox = Toolbox(solver=get_client(solver), retriever=task.retriever(), solver_params=params)
    started, finished = time.monotonic(), 0

    def keep(result: Any) -> None:
        nonlocal finished
        if result.unscored:  # the endpoint or sandbox failed, not the harness: redo on rerun
            log(f"{name}: {result.problem_id} unscored ({result.error}); left for a rerun")
            return
        problem = by_id[result.problem_id]
        row = record(task, problem, result)
        path = record_path(out, name, problem.id)
        path.with_suffix(".tmp").write_text(json.dumps(row))
        path.with_suffix(".tmp").replace(path)
        finished += 1
        rate = (time.monotonic() - started) / finished
        log(f"{name} [{len(problems) - len(todo) + finished}/{len(problems)}] "
            f"em={row['em']:.0f} f1={row['f1']:.2f} {result.latency_s:.0f}s "
            f"stage={failure_stage(row)} ~{rate * (len(todo) - finished) / 60:.0f} min left")

    await evaluate(seed_source(task.seed), todo, task, toolbox, concurrency=concurrency,
                   on_result=keep)


def load(out: Path, task: str) -> list[dict[str, Any]]:
    folder = out / task
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def interval(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean with a bootstrap 95% interval (resampling problems)."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), (BOOTSTRAP, len(data)))].mean(axis=1)
    return float(data.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def summary(task: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One task's line of the table: cost, EM and F1 with intervals, retrieval recall of the
    gold titles, and how many problems each failure stage holds."""
    em, em_lo, em_hi = interval([r["em"] for r in rows])
    f1, f1_lo, f1_hi = interval([r["f1"] for r in rows])
    stages = {s: 0 for s in STAGES}
    for r in rows:
        stages[failure_stage(r)] += 1
    by_type: dict[str, list[float]] = {}
    for r in rows:
        by_type.setdefault(str(r.get("type")), []).append(r["em"])
    latency = [r["result"]["latency_s"] for r in rows]
    calls = [sum(1 for c in r["result"]["calls"] if c["tool"] == "llm") for r in rows]
    return {"task": task, "n": len(rows), "s_per_problem": round(float(np.mean(latency)), 1),
            "llm_calls": round(float(np.mean(calls)), 2),
            "em": round(em, 3), "em_ci95": [round(em_lo, 3), round(em_hi, 3)],
            "f1": round(f1, 3), "f1_ci95": [round(f1_lo, 3), round(f1_hi, 3)],
            "gold_recall": round(float(np.mean([gold_recall(r) for r in rows])), 3),
            "repeated_query": sum(repeats_a_query(r) for r in rows),
            "stages": stages,
            "em_by_type": {t: [round(float(np.mean(v)), 3), len(v)] for t, v in sorted(by_type.items())}}


def table(lines: list[dict[str, Any]]) -> str:
    """The summaries as Markdown: the floor table, then the failure stages per task."""
    head = ["| task | n | s/problem | EM (95% CI) | F1 (95% CI) | gold-title recall "
            "| a hop repeated a query | EM by type |", "|---|---|---|---|---|---|---|---|"]
    for s in lines:
        types = ", ".join(f"{t} {v[0]:.2f} (n={v[1]})" for t, v in s["em_by_type"].items())
        head.append(f"| {s['task']} | {s['n']} | {s['s_per_problem']} | {s['em']:.3f} "
                    f"[{s['em_ci95'][0]:.3f}, {s['em_ci95'][1]:.3f}] | {s['f1']:.3f} "
                    f"[{s['f1_ci95'][0]:.3f}, {s['f1_ci95'][1]:.3f}] | {s['gold_recall']:.2f} "
                    f"| {s['repeated_query']} | {types} |")
    head += ["", "| task | " + " | ".join(STAGES) + " |", "|---|" + "---|" * len(STAGES)]
    for s in lines:
        head.append(f"| {s['task']} | " + " | ".join(str(s["stages"][k]) for k in STAGES) + " |")
    return "\n".join(head)


def run(tasks: list[str], n: int, out: Path, solver: str, params: dict[str, Any],
        concurrency: int = 2, log: Log = print) -> list[dict[str, Any]]:
    """Every task in order, resumed from `out`; then every task's summary (also written to
    `OUT/summary.json`)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in tasks:
        asyncio.run(run_task(name, n, out, solver, params, concurrency, log))
    lines = [summary(t, rows) for t in tasks if (rows := load(out, t))]
    (out / "summary.json").write_text(json.dumps(lines, indent=2))
    return lines
