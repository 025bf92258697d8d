"""`harness-learn show` and `report`: what a run did, in the terminal or as one HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import app
from harness_learning.cli._common import console, out

STORE_HELP = ("The run's log store URL (postgresql://USER@HOST:PORT/DB). A PostgreSQL run is "
              "read only with it: a store its config.json names is never connected to on the "
              "run directory's word. A password comes from the URL (or ?passfile=PATH), never "
              "from PGPASSWORD or ~/.pgpass.")


def given_store(value: str) -> str:
    """A `--store` URL is the user's own word, so its server may be connected to
    (`pgurl.give`); a URL no backend reads is a usage error."""
    from harness_learning.harnesses.store.pgurl import give

    try:
        give(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    return value


StoreOption = Annotated[str, typer.Option("--store", help=STORE_HELP, callback=given_store)]
"""`--store` for every command that opens a run's log."""


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    candidate: Annotated[str, typer.Option(help="A candidate id (r1-c0) or version sha prefix: "
                                                "its diff, the Proposer's report, its results.")] = "",
    store: StoreOption = "",
) -> None:
    """The run's lineage, each round's candidates (outcome, selection score, reward) and spend."""
    from harness_learning.report import load_run
    from harness_learning.report.terminal import candidate_detail, run_summary

    run = load_run(run_dir, store or None)
    out.print(candidate_detail(run, run.candidate(candidate)) if candidate else run_summary(run))


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    out_file: Annotated[Path | None, typer.Option("--out", help="HTML file to write "
                                                  "(default RUN/report.html).")] = None,
    store: StoreOption = "",
) -> None:
    """Write one self-contained HTML report of the run (opens from disk, needs no network)."""
    from harness_learning.harnesses.text_safety import for_rich, for_storage
    from harness_learning.report import load_run
    from harness_learning.report.html import render_html

    run = load_run(run_dir, store or None)
    path = out_file or Path(run_dir) / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    # a logged prompt read back from JSON may hold a lone surrogate, which UTF-8 cannot write
    path.write_text(for_storage(render_html(run)), encoding="utf-8")
    console.print(f"report: {for_rich(path)} ({path.stat().st_size:,} bytes)")
