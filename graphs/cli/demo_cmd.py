"""`harness-learn demo`: a short, real adaptation with the embedded local model."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from harness_learning.graphs.cli import app
from harness_learning.graphs.cli._common import console, out, run_async

DEMO_TASK = "rg:basic_arithmetic"
# One-digit sums: the 135M model gets some right, so scores move and every stage has work.
DEMO_CONFIG = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
               "operators": ["+"], "allow_parentheses": False, "allow_negation": False}


@app.command()
def demo(
    run_dir: Annotated[Path, typer.Option(help="Where the demo run is written.")] = Path("runs/demo"),
    fresh: Annotated[bool, typer.Option(help="Delete an earlier demo run first.")] = True,
) -> None:
    """Adapt the reasoning seed on a reasoning-gym task with SmolLM2 as Solver and Proposer
    (2 rounds x 2 candidates), then test the seed and each round's version on held-out problems."""
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.graphs.adapter.final_eval import final_evaluation
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.graphs.cli.adapt_cmd import _run

    if fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    config = prepare(AdaptConfig(
        task=DEMO_TASK, run_dir=str(run_dir), solver="local", proposer="local",
        task_options={"n_dev": 12, "n_test": 12, "config": DEMO_CONFIG},
        solver_params={"temperature": 0.0, "max_tokens": 96},
        proposer_params={"temperature": 0.7, "max_tokens": 384}, report_chars=2500,
        rounds=2, candidates=2, policy="best_valid", edit_format="search_replace",
        feedback=4, selection=8, concurrency=4))
    console.print(f"[bold]demo[/bold]: {DEMO_TASK}, Solver and Proposer = SmolLM2-135M (local)")
    _run(config, resume=False, as_json=False)
    summary = run_async(final_evaluation(run_dir, console=console))
    out.print(_answers_table(config, summary.rows[-1].sha))
    out.print(summary.table())
    out.print(f"held-out: seed {summary.rows[0].test:.3f} -> final {summary.rows[-1].test:.3f}"
              f" · plot {summary.plot_path} · diffs {summary.diffs_path}")


def _answers_table(config, sha: str):
    """The final version's held-out answers, as SmolLM2 wrote them, beside the gold."""
    from harness_learning.evals.registry import get_task
    from harness_learning.graphs.adapter.report import gold_answer
    from harness_learning.graphs.cli._common import results_table
    from harness_learning.harnesses.store import SQLiteLogStore

    problems = {p.id: p for p in get_task(config.task, **config.task_options).test()}
    rows = []
    with SQLiteLogStore(config.path) as store:
        for ev in store.iter_evaluations(sha=sha, purpose="test"):
            e = ev.result
            problem = problems[e.problem_id]
            rows.append({"question": problem.question, "answer": e.answer,
                         "gold": gold_answer(problem),
                         "score": "-" if e.score is None else f"{e.score:.0f}"})
    return results_table(f"held-out answers of version {sha[:12]} (Solver: SmolLM2-135M)", rows,
                         ["question", "answer", "gold", "score"])
