"""`harness-learn bench qa-relay` (registered on import): a relay of rounds against single-step
edits on the QA tasks with a floor (`harness_learning_lab.bench.qa_relay`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("qa-relay")
def bench_qa_relay(
    out: Annotated[Path, typer.Option(help="Bench directory: each run resumes where it stopped; finished runs are reused.")] = Path("runs/bench-qa-relay"),
    smoke: Annotated[bool, typer.Option("--smoke", help="The settings' \\[smoke] size: SmolLM2 in both roles, tiny splits, minutes.")] = False,
    config: Annotated[Path, typer.Option(help="Bench settings (tasks, rounds, operators, sizes, models).")] = Path("experiments/qa/relay.toml"),
    task: Annotated[list[str] | None, typer.Option(help="Only these tasks (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the figures as JSON.")] = False,
) -> None:
    """The paper's QA finding at CPU scale: per task the seed, single-step edits (one round of
    N Proposer edits and N operator candidates) and a relay (N rounds of one of each), selected
    on token F1; held-out EM and F1 with paired 95% intervals, where each adopted change came
    from, and round 1's share of the relay's gain."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.evals.registry import QA_TASKS
    from harness_learning.evals.samples import DataDirUnset, data_dir
    from harness_learning_lab.bench import qa_relay

    try:
        settings = qa_relay.load_settings(config, smoke=smoke)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc), "give a settings file like experiments/qa/relay.toml",
                       EXIT_USAGE) from None
    if task:
        settings["tasks"] = list(task)
    unknown = [t for t in settings["tasks"] if t not in QA_TASKS]
    if unknown or not settings["tasks"]:
        raise CliError(f"tasks {', '.join(unknown) or '(none)'} are not QA tasks",
                       f"choose from {', '.join(QA_TASKS)}", EXIT_USAGE)
    try:
        data_dir()
    except DataDirUnset as exc:
        raise CliError(str(exc), exc.hint, EXIT_USAGE) from None
    results = qa_relay.run(settings, out, log=lambda m: print(m, file=sys.stderr, flush=True))
    text = qa_relay.table(results)
    (out / "qa_relay.md").write_text(text + "\n")
    print(text, flush=True)
    if as_json:
        print(json.dumps(results))
