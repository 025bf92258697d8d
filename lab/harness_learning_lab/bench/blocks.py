"""`bench blocks`: each building block's measured effect, per task, against the seed it wraps.

Every arm is the task's seed with one operator applied (`harnesses.edits.operators`), evaluated
on the same held-out problems with the same Solver; the table gives each arm's mean, its gain
over the seed with a paired bootstrap 95% interval, and Solver calls per problem; on QA, whose
exact match a 1.5B Solver rarely earns, also the token F1 beside it. Results are
kept per (task, arm) in `--out` as JSON, so a rerun resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_learning.evals.evaluator import evaluate
from harness_learning.evals.registry import get_task
from harness_learning.harnesses.edits.operators import OPERATORS, apply_operator, misfit
from harness_learning.harnesses.llm import get_client
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox

REASONING_TASKS = ("rg:products", "rg:chain_sum", "rg:basic_arithmetic", "rg:letter_counting")
REASONING_BLOCKS = ("interpreter", "plan", "verify", "vote")
QA_BLOCKS = ("rewrite_query", "extra_hop", "check", "passages", "short_answer")
SEED = "seed"
BOOTSTRAP = 2000


@dataclass
class Arm:
    """One (task, arm) evaluation: per-problem scores in problem order, and the cost."""

    task: str
    arm: str
    scores: list[float]
    llm_calls: int
    wall_s: float
    f1: list[float] | None = None
    """Per-problem token F1, for tasks with `metrics` (QA); None elsewhere."""
    answers: list[str | None] | None = None
    """Per-problem answer (None for an error), so a kept arm can be read for why it lost
    without running it again; None in files kept before it was recorded."""


def arm_source(task: Any, arm: str) -> str:
    seed = seed_source(task.seed)
    if arm == SEED:
        return seed
    reason = misfit(OPERATORS[arm], seed)
    if reason is not None:
        raise ValueError(f"block {arm!r} does not fit {task.name}'s seed: {reason}")
    return apply_operator(OPERATORS[arm], seed)


async def run_arm(task: Any, arm: str, problems: list, solver: str, params: dict,
                  concurrency: int) -> Arm:
    import time

    toolbox = Toolbox(solver=get_client(solver), retriever=task.retriever(), solver_params=params)
    started = time.monotonic()
    result = await evaluate(arm_source(task, arm), problems, task, toolbox, concurrency=concurrency)
    calls = sum(1 for r in result.results for c in r.calls if c.tool == "llm")
    return Arm(task.name, arm, [r.score or 0.0 for r in result.results], calls,
               round(time.monotonic() - started, 1), f1_scores(task, problems, result.results),
               [r.answer for r in result.results])


def f1_scores(task: Any, problems: list, results: Sequence[ProblemResult]) -> list[float] | None:
    """Each answer's token F1 by the task's own `metrics` (QA tasks); None for a task without
    them. An answer that is missing (an error) scores 0."""
    metrics = getattr(task, "metrics", None)
    if metrics is None:
        return None
    return [metrics(p, r.answer)["f1"] for p, r in zip(problems, results, strict=True)]


def paired_interval(base: list[float], arm: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean gain of `arm` over `base` on the same problems, with a bootstrap 95% interval."""
    diff = np.asarray(arm) - np.asarray(base)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), (BOOTSTRAP, len(diff)))].mean(axis=1)
    return float(diff.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def run(tasks: list[str], arms: list[str], n: int, out: Path, solver: str, params: dict,
        task_options: dict[str, dict], concurrency: int = 2,
        log: Callable[[str], None] = print) -> list[dict]:
    """Every (task, arm), resumed from `out`; the table rows."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in tasks:
        task = get_task(name, n_test=n, **task_options.get(name, {}))
        problems = task.test()[:n]
        done: dict[str, Arm] = {}
        for arm in [SEED, *arms]:
            path = out / f"{name.replace(':', '_')}__{arm}.json"
            if path.exists():
                done[arm] = Arm(**json.loads(path.read_text()))
                continue
            log(f"{name} · {arm}: {len(problems)} problems")
            done[arm] = asyncio.run(run_arm(task, arm, problems, solver, params, concurrency))
            path.write_text(json.dumps(asdict(done[arm])))
        base = done[SEED].scores
        for arm, result in done.items():
            gain, lo, hi = paired_interval(base, result.scores)
            rows.append({"task": name, "arm": arm, "n": len(result.scores),
                         "mean": round(float(np.mean(result.scores)), 3),
                         "gain": round(gain, 3), "ci95": [round(lo, 3), round(hi, 3)],
                         "llm_calls_per_problem": round(result.llm_calls / len(result.scores), 2),
                         "wall_s": result.wall_s,
                         **({} if result.f1 is None else {"f1": round(float(np.mean(result.f1)), 3)})})
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table (what docs/BLOCKS.md holds), with an F1 column when a row
    has one."""
    with_f1 = any("f1" in r for r in rows)
    f1_head, f1_rule = (" F1 |", "---|") if with_f1 else ("", "")
    lines = [f"| task | arm | n | mean |{f1_head} gain over seed (95% CI) | Solver calls/problem "
             "| wall s |", f"|---|---|---|---|{f1_rule}---|---|---|"]
    for r in rows:
        gain = "-" if r["arm"] == SEED else (f"{r['gain']:+.3f} [{r['ci95'][0]:+.3f}, "
                                             f"{r['ci95'][1]:+.3f}]")
        f1 = ""
        if with_f1:
            f1 = f" {r['f1']:.3f} |" if "f1" in r else " - |"
        lines.append(f"| {r['task']} | {r['arm']} | {r['n']} | {r['mean']:.3f} |{f1} {gain} | "
                     f"{r['llm_calls_per_problem']} | {r['wall_s']} |")
    return "\n".join(lines)
