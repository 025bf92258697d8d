"""`harness-learn demo`: a short, real adaptation with the two local models."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from harness_learning.graphs.cli import app
from harness_learning.graphs.cli._common import console, out, print_json_last, run_async

DEMO_TASK = "rg:basic_arithmetic"
# Sums of two one-digit numbers: the 135M Solver gets most right, and what it gets wrong is
# visible in the report (answers like "10." or "3 + 4 = 7" fail the exact match), so the seed
# has a flaw the Proposer can read and fix in a few minutes on 2 cores.
DEMO_CONFIG = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
               "operators": ["+"], "allow_parentheses": False, "allow_negation": False}
DEMO_SOLVER = "local"  # SmolLM2-135M
DEMO_PROPOSER = "local"  # Qwen2.5-Coder-1.5B (see harnesses.llm.models)


def demo_config(run_dir: Path, seed: int):
    from harness_learning.graphs.adapter.config import AdaptConfig

    return AdaptConfig(
        task=DEMO_TASK, run_dir=str(run_dir), solver=DEMO_SOLVER, proposer=DEMO_PROPOSER,
        task_options={"n_dev": 24, "n_test": 24, "config": DEMO_CONFIG},
        solver_params={"temperature": 0.0, "max_tokens": 96},
        proposer_params={"temperature": 0.7, "max_tokens": 384}, report_chars=2500,
        rounds=3, candidates=3, policy="best_valid", edit_format="search_replace",
        feedback=6, selection=12, concurrency=4, seed=seed)


@app.command()
def demo(
    run_dir: Annotated[Path, typer.Option(help="Where the demo run is written.")] = Path("runs/demo"),
    fresh: Annotated[bool, typer.Option(help="Delete an earlier demo run first.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the round samples and Proposer samples.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
) -> None:
    """Adapt the reasoning seed on one-digit sums: Qwen2.5-Coder-1.5B proposes edits, SmolLM2-135M
    solves (3 rounds x 3 candidates); then test the seed and each round's version on held-out
    problems."""
    from harness_learning.graphs.adapter.final_eval import final_evaluation
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.graphs.cli.adapt_cmd import _run
    from harness_learning.graphs.cli.models_cmd import require_local_models
    from harness_learning.harnesses.llm.models import resolve_role

    started = time.monotonic()
    require_local_models(DEMO_SOLVER, resolve_role(DEMO_PROPOSER, "proposer"))
    if fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    config = prepare(demo_config(run_dir, seed))
    console.print(f"[bold]demo[/bold]: {DEMO_TASK} (one-digit sums), Solver SmolLM2-135M, "
                  "Proposer Qwen2.5-Coder-1.5B, both local")
    final = _run(config, resume=False, as_json=False)
    out.print(_candidates_table(final))
    summary = run_async(final_evaluation(run_dir, console=console))
    diff = summary.diffs_path.read_text(encoding="utf-8").strip()
    out.print("adopted diff:\n" + (diff or "(nothing adopted: the seed is kept)"))
    out.print(_answers_table(config, summary.rows[-1].sha))
    out.print(summary.table())
    out.print(f"held-out: seed {summary.rows[0].test:.3f} -> final {summary.rows[-1].test:.3f}"
              f" · plot {summary.plot_path} · diffs {summary.diffs_path}")
    if as_json:
        rounds = final.get("rounds", [])
        print_json_last({"adopted": sum(1 for r in rounds if r.get("adopted")),
                         "seed_test": summary.rows[0].test, "final_test": summary.rows[-1].test,
                         "rounds": len(rounds), "wall_s": round(time.monotonic() - started, 1),
                         "seed": seed})


def _candidates_table(final: dict[str, Any]):
    """Every candidate of every round: its outcome (valid, or why not) and selection score."""
    from harness_learning.graphs.cli._common import results_table
    from harness_learning.graphs.cli.candidate_outcomes import outcome

    rows = []
    for r in final.get("rounds", []):
        for c in r.get("candidates", []):
            score = c.get("selection_score")
            rows.append({"round": r["round"], "cand": c["index"], "outcome": outcome(c),
                         "selection": "-" if score is None else f"{score:.3f}",
                         "vs current": "-" if r.get("current_selection_score") is None
                         else f"{r['current_selection_score']:.3f}",
                         "adopted": "yes" if r.get("adopted") and c.get("sha") == r.get("chosen_sha")
                         else "", "reason": c.get("invalid_reason") or ""})
    return results_table("candidates", rows, ["round", "cand", "outcome", "selection",
                                              "vs current", "adopted", "reason"])


def _answers_table(config, sha: str):
    """The final version's held-out answers, as SmolLM2 wrote them, beside the gold."""
    from harness_learning.evals.registry import get_task
    from harness_learning.graphs.adapter.report import gold_answer
    from harness_learning.graphs.cli._common import results_table
    from harness_learning.harnesses.rundir import RunDir

    problems = {p.id: p for p in get_task(config.task, **config.task_options).test()}
    rows = []
    with RunDir(config.path).open_store() as store:
        for ev in store.iter_evaluations(sha=sha, purpose="test"):
            e = ev.result
            problem = problems[e.problem_id]
            rows.append({"question": problem.question, "answer": e.answer,
                         "gold": gold_answer(problem),
                         "score": "-" if e.score is None else f"{e.score:.0f}"})
    return results_table(f"held-out answers of version {sha[:12]} (Solver: SmolLM2-135M)", rows,
                         ["question", "answer", "gold", "score"])
