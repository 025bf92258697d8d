"""`harness-learn bench experience`: the experience library against the Proposer alone and the
hand-written operator order, on held-out task types (lab code, loaded lazily)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("experience")
def bench_experience(
    smoke: Annotated[bool, typer.Option(help="The settings' smoke table: SmolLM2 in both roles, tiny sizes, a few minutes.")] = False,
    settings: Annotated[Path | None, typer.Option(help="Bench settings (experiments/experience/bench.toml).")] = None,
    types: Annotated[Path | None, typer.Option(help="Classed task types (experiments/task_types.toml).")] = None,
    out: Annotated[Path, typer.Option(help="Runs, libraries, split and table; finished runs are kept and not redone.")] = Path("runs/bench-experience"),
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the rows and summary as JSON.")] = False,
    finished: Annotated[bool, typer.Option(help="Print the table of the runs finished so far in OUT and run nothing: no server, no file written (a look at a bench another process is running).")] = False,
) -> None:
    """Train a library with operators auto on training types, then per held-out type and a
    control: Proposer only, the library (operators off), operators auto (no library), and the
    library growing over the held-out types in sequence with retention reruns."""
    from harness_learning_lab.bench import experience as bench
    from harness_learning_lab.bench import experience_report as report

    try:
        chosen = bench.load_settings(settings or bench.SETTINGS, smoke)
        split = bench.plan(chosen, types or bench.TYPES)
        if finished:
            results = bench.finished(out, split)
        else:
            bench.write_split(out, split)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        raise typer.BadParameter(str(exc) if not isinstance(exc, KeyError)
                                 else f"bench settings lack {exc}") from None
    if finished:
        table = report.rows(results, split)
        summ = report.summary(table)
        print(f"{len(results)} of {len(bench.runs(out, split))} runs finished in {out}")
        print(report.markdown(table, summ))
        if as_json:
            print(json.dumps({"rows": table, **summ}))
        return
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    log(f"split ({out / bench.SPLIT}): train {', '.join(split['train'])}; held out "
        f"{', '.join(split['held_out'])}; control {split['control']}")
    try:
        results = bench.run_all(out, chosen, split, bench.run_one,
                                bench.test_scores(out, chosen), log)
    finally:
        from harness_learning.harnesses.llm import stop_local_server

        stop_local_server()
    table = report.rows(results, split)
    summ = report.summary(table)
    title = (f"bench experience{' --smoke' if smoke else ''}: held-out score and Solver calls per "
             f"type and arm\n"
             f"Solver {chosen['solver']}, Proposer {chosen['proposer']}, {chosen['rounds']} "
             f"rounds, seeds {split['seeds']}")
    written = report.write(out, table, summ, title)
    print(report.markdown(table, summ))
    log(f"written: {', '.join(map(str, written))}")
    if as_json:
        print(json.dumps({"rows": table, **summ}))
