"""`harness-learn bench qa-floor`: the QA seed's exact match, F1, cost and failure stages on the
closed sample corpora (lab code, loaded lazily)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("qa-floor")
def bench_qa_floor(
    tasks: Annotated[str, typer.Option(help="Comma-separated QA tasks, run in this order.")] = "2wiki,hotpotqa,musique",
    n: Annotated[int, typer.Option(help="Held-out problems per task (the samples' test splits hold 54, 40 and 40).")] = 24,
    solver: Annotated[str, typer.Option(help="Solver model (`local:qwen2.5-coder-1.5b?replicas=2` answers two at once).")] = "local:qwen2.5-coder-1.5b",
    concurrency: Annotated[int, typer.Option(help="Problems run at once.")] = 2,
    out: Annotated[Path, typer.Option(help="One file per finished problem (with its trace), resumed on a rerun; indexes and summary.json.")] = Path("runs/bench-qa-floor"),
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the summaries as JSON.")] = False,
) -> None:
    """The seed (`multihop_two_hop`) on each QA task's closed sample corpus: seconds per
    problem, EM and F1 with bootstrap 95% intervals, recall of the gold titles, and where each
    wrong answer was lost (not retrieved, lost in the summaries, or wrong in the output)."""
    from harness_learning.evals.registry import QA_TASKS
    from harness_learning.evals.samples import DataDirUnset, data_dir
    from harness_learning_lab.bench import qa_floor

    chosen = [t for t in tasks.split(",") if t]
    unknown = [t for t in chosen if t not in QA_TASKS]
    if not chosen or unknown:
        raise typer.BadParameter(f"--tasks {tasks!r}: choose from {', '.join(qa_floor.TASKS)}")
    if n < 1:
        raise typer.BadParameter(f"--n {n}: give at least 1 problem per task")
    try:
        data_dir()
    except DataDirUnset as exc:
        raise typer.BadParameter(f"{exc}; {exc.hint}") from None
    params = {"temperature": 0.0, "max_tokens": 256}
    lines = qa_floor.run(chosen, n, out, solver, params, concurrency,
                         log=lambda m: print(m, file=sys.stderr, flush=True))
    print(qa_floor.table(lines))
    if as_json:
        print(json.dumps(lines))
