"""`harness-learn demo`: a short, real adaptation with the two local models."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from harness_learning.cli import app
from harness_learning.cli._common import console, out, print_json_last, run_async

DEMO_TASK = "rg:products"
# Products of numbers up to 5 digits: Qwen2.5-Coder-1.5B gets about a third right by reasoning
# in prose, and all of them when it writes a program that computes the product (measured), so
# the seed has headroom that a structural change, not a formatting fix, can take.
# The paper's same-model setup, scaled down. Two Solver servers (one thread each) answer a
# round's problems two at a time; the Proposer has a server of its own.
DEMO_SOLVER = "local:qwen2.5-coder-1.5b?replicas=2"
DEMO_PROPOSER = "local"  # Qwen2.5-Coder-1.5B too, on a server of its own
DEMO_TEST = 24  # held-out problems of the README's figures (`--test`)


def demo_config(run_dir: Path, seed: int, solver: str = DEMO_SOLVER,
                task_config: dict[str, Any] | None = None, proposer: str = DEMO_PROPOSER,
                n_test: int = DEMO_TEST):
    from harness_learning.graphs.adapter.config import AdaptConfig

    config = {"config": task_config} if task_config else {}
    return AdaptConfig(
        task=DEMO_TASK, run_dir=str(run_dir), solver=solver, proposer=proposer,
        task_options={"n_dev": 24, "n_test": n_test, **config},
        solver_params={"temperature": 0.0, "max_tokens": 256},
        proposer_params={"temperature": 0.7, "max_tokens": 384}, report_chars=2500,
        rounds=2, candidates=1, operators="auto", operators_per_round=1, policy="best_valid",
        edit_format="function", repair_turns=1, feedback=4, selection=8, concurrency=2,
        seed=seed)


@app.command()
def demo(
    run_dir: Annotated[Path, typer.Option(help="Where the demo run is written.")] = Path("runs/demo"),
    fresh: Annotated[bool, typer.Option(help="Delete an earlier demo run first.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the round samples and Proposer samples.")] = 0,
    solver: Annotated[str, typer.Option(help="Solver model (the tests' fast control-flow run "
                                             "uses local:smollm2-135m).")] = DEMO_SOLVER,
    proposer: Annotated[str, typer.Option(help="Proposer model: `local` is Qwen2.5-Coder-1.5B; "
                                               "any litellm model id works, e.g. a stronger "
                                               "hosted one.")] = DEMO_PROPOSER,
    task_config: Annotated[str, typer.Option(help="The task's reasoning-gym config as JSON, e.g. "
                                                  "'{\"max_digits\": 1}' (default: products of "
                                                  "numbers up to 5 digits).")] = "",
    test: Annotated[int, typer.Option(min=1, help="Held-out test problems (the README's figures "
                                                  "use 24; fewer for a quicker look).")] = DEMO_TEST,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
) -> None:
    """Adapt the reasoning seed on multiplications: Qwen2.5-Coder-1.5B solves and proposes, and
    operator candidates apply building blocks (2 rounds x 1 Proposer edit + 1 operator); then
    test the seed and the final version on 24 held-out problems (`--test`)."""
    from harness_learning.cli.adapt_cmd import _run
    from harness_learning.cli.models_cmd import require_local_models
    from harness_learning.graphs.adapter.final_eval import final_evaluation
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.harnesses.llm.models import resolve_role

    started = time.monotonic()
    proposer = resolve_role(proposer, "proposer")
    require_local_models(solver, proposer)
    if fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    run = prepare(demo_config(run_dir, seed, solver,
                              parse_json_option(task_config, "--task-config"), proposer, test))
    config = run.config
    console.print(f"[bold]demo[/bold]: {DEMO_TASK} (multiplications), Solver {solver}, "
                  f"Proposer {proposer}, operators auto")
    final = _run(run, resume=False, as_json=False, test_problems=test)  # the seed and final
    out.print(_candidates_table(final))
    summary = run_async(final_evaluation(run_dir, console=console, ends_only=True))
    diff = summary.diffs_path.read_text(encoding="utf-8").strip()
    out.print("adopted diff:\n" + (diff or "(nothing adopted: the seed is kept)"))
    out.print(_answers_table(config, summary.rows[-1].sha))
    out.print(summary.table())
    adopted_from = adopted_origins(final)
    out.print(f"held-out: seed {summary.rows[0].test:.3f} -> final {summary.rows[-1].test:.3f}"
              f" · adopted from {', '.join(adopted_from) or 'nothing (the seed is kept)'}"
              f" · plot {summary.plot_path} · diffs {summary.diffs_path}")
    if as_json:
        rounds = final.get("rounds", [])
        print_json_last({"adopted": sum(1 for r in rounds if r.get("adopted")),
                         "adopted_from": adopted_from,
                         "seed_test": summary.rows[0].test, "final_test": summary.rows[-1].test,
                         "rounds": len(rounds), "wall_s": round(time.monotonic() - started, 1),
                         "seed": seed})


def parse_json_option(text: str, flag: str) -> dict[str, Any] | None:
    """A JSON-object option's value (None when empty), or a one-line usage error."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise typer.BadParameter(f"{flag} {text!r} is not JSON: {err.msg}") from None
    if not isinstance(value, dict):
        raise typer.BadParameter(f"{flag} must be a JSON object, got {text!r}")
    return value


def adopted_origins(final: dict[str, Any]) -> list[str]:
    """Where each adopted candidate came from (proposer, operator:NAME, merge), round by round."""
    origins = []
    for r in final.get("rounds", []):
        chosen = [c for c in r.get("candidates", []) if c.get("sha") == r.get("chosen_sha")]
        if r.get("adopted") and chosen:
            origins.append(chosen[0].get("origin", "proposer"))
    return origins


def _candidates_table(final: dict[str, Any]):
    """Every candidate of every round: its outcome (valid, or why not) and selection score."""
    from harness_learning.cli._common import results_table
    from harness_learning.cli.candidate_outcomes import outcome

    rows = []
    for r in final.get("rounds", []):
        for c in r.get("candidates", []):
            score = c.get("selection_score")
            rows.append({"round": r["round"], "cand": c["index"],
                         "from": c.get("origin", "proposer"), "outcome": outcome(c),
                         "selection": "-" if score is None else f"{score:.3f}",
                         "vs current": "-" if r.get("current_selection_score") is None
                         else f"{r['current_selection_score']:.3f}",
                         "adopted": "yes" if r.get("adopted") and c.get("sha") == r.get("chosen_sha")
                         else "", "reason": c.get("invalid_reason") or ""})
    return results_table("candidates", rows, ["round", "cand", "from", "outcome", "selection",
                                              "vs current", "adopted", "reason"])


def _answers_table(config, sha: str):
    """The final version's held-out answers, as the Solver wrote them, beside the gold."""
    from harness_learning.cli._common import results_table
    from harness_learning.evals.problem import gold_answer
    from harness_learning.evals.registry import get_task
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
    return results_table(f"held-out answers of version {sha[:12]} (Solver: {config.solver})", rows,
                         ["question", "answer", "gold", "score"])
