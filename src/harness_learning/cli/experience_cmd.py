"""`harness-learn experience add|list|show|prune|export|import`: the experience library.

A library is a directory or a postgresql:// URL (`harnesses.experience.library`); a URL typed
here is the user's own word, so its server may be connected to. Every bad input is one line with
a hint and a non-zero exit (a damaged library file, a newer schema, an unknown kind of URL, a
server that does not answer); an entry or line that cannot be read is skipped with one line each,
and nothing held is changed by a command that failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import app
from harness_learning.cli._common import console, out, print_json_last
from harness_learning.graphs.adapter.sealed_inputs import TRUST_HELP

experience_app = typer.Typer(help="The experience library: judged changes kept across runs "
                             "(`adapt --experience PATH` reads and writes one).",
                             no_args_is_help=True)
app.add_typer(experience_app, name="experience")

LIBRARY_HELP = ("The library: a directory, or postgresql://USER@HOST:PORT/DATABASE (a password in "
                "the URL or its ?passfile=PATH; PGPASSWORD and ~/.pgpass are not read).")
LibraryArg = Annotated[str, typer.Argument(help=LIBRARY_HELP)]
HINT = ("an experience library is a directory or a postgresql:// URL, made by `adapt --experience "
        "PATH` or `experience add`")


def _open(path: str, create: bool = False):
    """The library at `path` (given here: a URL's server may be connected to)."""
    from harness_learning.cli.errors import CliError
    from harness_learning.harnesses.experience import Library, LibraryError, give_location

    try:
        return Library(give_location(path), create=create)
    except LibraryError as exc:
        raise CliError(str(exc), HINT) from exc


def _warn(lines: list[str]) -> None:
    for line in lines:
        console.print(f"warning: {line}", markup=False, highlight=False)


@experience_app.command("add")
def add(run_dirs: Annotated[list[Path], typer.Argument(help="Finished run directories.")],
        to: Annotated[str, typer.Option("--to", help=f"{LIBRARY_HELP} Made if new.")],
        trust_inputs: Annotated[bool, typer.Option("--trust-inputs", help=TRUST_HELP)] = False,
        ) -> None:
    """Add the judged changes of each run to the library (redacted; outcomes merged). A run's
    task is opened to describe its changes, so a handed run's kept code is checked first, as
    `resume` checks it."""
    from harness_learning.cli._common import user_errors
    from harness_learning.graphs.adapter.experience import add_run
    from harness_learning.graphs.adapter.inputs import inputs_dir, open_task
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.graphs.adapter.sealed_inputs import check_sealed
    from harness_learning.harnesses.rundir import RunDir

    with _open(to, create=True) as lib:
        for run_dir in run_dirs:
            with user_errors("give a run directory written by `adapt`"):
                config = load_config(run_dir)
                check_sealed(inputs_dir(config), trust_inputs)  # before anything is imported
                task = open_task(config)
            with RunDir(run_dir).open_store(read_only=True) as store:
                written, withheld = add_run(lib, store, task, config)
            note = f" ({withheld} with code withheld: it held a question or answer)" \
                if withheld else ""
            out.print(f"{run_dir}: {written} entries added to {lib.location}{note}", markup=False)
        _warn(lib.skipped)


@experience_app.command("list")
def list_entries(path: LibraryArg, as_json: Annotated[bool, typer.Option(
        "--json", help="End with a JSON list of the entries.")] = False) -> None:
    """One line per entry: id, kind, outcomes, successes, mean gain, summary."""
    with _open(path) as lib:
        entries = lib.entries()
        _warn(lib.skipped)
    for e in entries:
        gains = [o.gain for o in e.outcomes if o.gain is not None]
        mean = f"{sum(gains) / len(gains):+.3f}" if gains else "n/a"
        wins = sum(o.success for o in e.outcomes)
        code = "" if e.applicable else " [code withheld]"
        out.print(f"{e.short}  {e.kind:<8} {len(e.outcomes)} outcome(s), {wins} gained, mean "
                  f"gain {mean}  {e.origin}: {e.summary}{code}", markup=False, highlight=False)
    if as_json:
        print_json_last({"entries": [e.to_dict() for e in entries]})


@experience_app.command("show")
def show(path: LibraryArg, entry: Annotated[str, typer.Argument(help="An entry id or prefix.")]
         ) -> None:
    """An entry's change and every outcome with its provenance."""
    from harness_learning.cli.errors import CliError

    with _open(path) as lib:
        found = lib.get(entry)
    if found is None:
        raise CliError(f"no single entry of {lib.location} has an id starting {entry!r}",
                       "`harness-learn experience list PATH` shows the ids")
    out.print(f"entry {found.id}\nkind {found.kind}  origin {found.origin}  "
              f"{found.summary}", markup=False, highlight=False)
    for search, replace in found.blocks:
        out.print(f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE",
                  markup=False, highlight=False)
    for o in found.outcomes:
        sel = "n/a" if o.selection_gain is None else f"{o.selection_gain:+.3f}"
        held = "" if o.held_out_gain is None else f", held-out gain {o.held_out_gain:+.3f}"
        kind = f" ({o.invalid_kind})" if o.invalid_kind else ""
        out.print(f"  run {o.run[:12]} round {o.round} candidate {o.candidate} task {o.task}: "
                  f"{o.verdict}{kind}, selection gain {sel}{held}", markup=False,
                  highlight=False)


@experience_app.command("prune")
def prune(path: LibraryArg,
          run: Annotated[str, typer.Option(help="Drop this run's outcomes (id prefix).")] = "",
          invalid: Annotated[bool, typer.Option(help="Drop entries whose every outcome is "
                                                "invalid.")] = False) -> None:
    """Drop outcomes or entries; an entry left with no outcome is dropped."""
    from dataclasses import replace

    from harness_learning.cli.errors import EXIT_USAGE, CliError

    if not run and not invalid:
        raise CliError("prune needs --run RUN or --invalid", "nothing was dropped", EXIT_USAGE)
    with _open(path) as lib:
        keep, drop = [], []
        for e in lib.entries():
            outcomes = tuple(o for o in e.outcomes if not (run and o.run.startswith(run)))
            if not outcomes or (invalid and all(o.verdict == "invalid" for o in outcomes)):
                drop.append(e.id)
            elif outcomes != e.outcomes:
                keep.append(replace(e, outcomes=outcomes))
        lib.replace_entries(keep)
        lib.remove(drop)
        _warn(lib.skipped)
    out.print(f"{lib.location}: {len(drop)} entries dropped, {len(keep)} trimmed", markup=False)


@experience_app.command("export")
def export(path: LibraryArg, to: Annotated[Path, typer.Option(
        "--to", help="The JSON Lines file to write.")]) -> None:
    """Write every readable entry as JSON Lines (entries are redacted: safe to share)."""
    with _open(path) as lib:
        n = lib.export(to)
        _warn(lib.skipped)
    out.print(f"{to}: {n} entries", markup=False)


@experience_app.command("import")
def import_entries(path: LibraryArg, files: Annotated[list[Path], typer.Argument(
        help="JSON Lines files written by `experience export`.")]) -> None:
    """Merge exported entries into the library (a bad line is skipped with one line)."""
    from harness_learning.cli.errors import CliError
    from harness_learning.harnesses.experience import LibraryError
    from harness_learning.harnesses.experience.library import read_export

    with _open(path, create=True) as lib:
        for file in files:
            try:
                entries, bad = read_export(file)
            except LibraryError as exc:
                raise CliError(str(exc), "nothing of it was imported") from exc
            _warn(bad)
            out.print(f"{file}: {lib.add(entries)} entries merged into {lib.location}", markup=False)
        _warn(lib.skipped)


__all__ = ["experience_app"]
