"""Helpers shared by CLI commands: task options, harness sources, tables."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from harness_learning.harnesses.text_safety import for_rich, for_terminal

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.racing import RaceRule

# Piped output (CI logs, `| tee`) gets 140 columns rather than rich's 80, so tables stay readable.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
out = Console(width=None if sys.stdout.isatty() else 140)


@contextlib.contextmanager
def progress(description: str, total: int, transient: bool = False) -> Iterator[Callable[[], None]]:
    """`advance()` per finished item: a bar on a terminal; elsewhere (CI, nohup, a pipe), where
    a bar draws nothing, a line at every tenth of the way."""
    if console.is_terminal:
        from rich.progress import Progress

        with Progress(console=console, transient=transient) as bar:
            task = bar.add_task(description, total=total)
            yield lambda: bar.advance(task)
        return
    done, step = 0, max(1, total // 10)

    def advance() -> None:
        nonlocal done
        done += 1
        if done % step == 0 or done == total:
            console.print(f"{description}: {done}/{total}")

    yield advance


def task_options(data: Path | None, index: Path | None, n_dev: int | None = None,
                 n_test: int | None = None, seed: int | None = None) -> dict[str, Any]:
    """Only the options the user gave, so each task keeps its own defaults."""
    given = {"path": data, "index_dir": index, "n_dev": n_dev, "n_test": n_test, "seed": seed}
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in given.items() if v is not None}


def read_harness(harness: str) -> str:
    """The source a harness reference names: a seed, a file, or a run directory's current
    version (`graphs.serving.harness_source.resolve_harness`, the one resolver); one error line with
    exit code 2 when it names none."""
    from harness_learning.graphs.serving.harness_source import resolve_harness

    with user_errors("give a seed name, a harness .py file or a run directory"):
        return resolve_harness(harness).source


USER_ERRORS = (ValueError, TypeError, LookupError, OSError, ImportError)
"""What bad input raises (a data file's bad line, an unknown metric, a tool that does not
import, a missing run directory): shown as one line, not a traceback."""


@contextlib.contextmanager
def user_errors(hint: str = "check the values given on the command line (--help lists them)"
                ) -> Iterator[None]:
    """Turn bad input into the command line's one error line (cli/errors.py) with exit
    code 2, not a traceback."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError

    try:
        yield
    except USER_ERRORS as exc:  # an error that knows its own fix says it (`exc.hint`)
        own = getattr(exc, "hint", None)
        raise CliError(str(exc), own if isinstance(own, str) and own else hint,
                       EXIT_USAGE) from exc


def short(text: object, width: int = 40) -> str:
    """One line of at most `width` characters, safe for a terminal (`for_terminal`)."""
    text = " ".join(for_terminal(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def results_table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> Table:
    """Cells are a harness's answers and errors: data, shown as written (escaped for rich)."""
    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*[for_rich(short(row.get(c, ""), 48)) for c in columns])
    return table


def print_json_last(payload: dict[str, Any]) -> None:
    """The machine-readable summary is always the last line printed."""
    print(json.dumps(payload, default=str), flush=True)


def run_async(coro):
    return asyncio.run(coro)


def race_rule(text: str) -> RaceRule:
    """A `RaceRule` from a `--race` JSON option ('' is the default rule)."""
    import typer

    from harness_learning.graphs.adapter.racing import RaceRule

    if not text:
        return RaceRule()
    try:
        return RaceRule.from_dict(json.loads(text))
    except (ValueError, TypeError) as e:
        raise typer.BadParameter(f"--race: {e}") from e


SANDBOX_HELP = ("Where harness code runs: auto (the available backend applying the most "
                "protections; local at a tie), local or docker. Default: HARNESS_SANDBOX, "
                "else auto.")


def check_sandbox(name: str) -> None:
    """Apply `--sandbox` (it sets HARNESS_SANDBOX for this process, which the workers' backend
    is read from), before anything is written: a backend that is unknown or cannot start here
    is the command line's one error line (exit 2)."""
    import os

    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.harnesses.sandbox.backend import (
        SANDBOX_ENV,
        backend_class,
        requested_backend,
    )

    if name:
        os.environ[SANDBOX_ENV] = name
    requested = requested_backend()
    if requested != "auto":
        with user_errors("--sandbox (or HARNESS_SANDBOX) takes auto, local or docker"):
            available = backend_class(requested).available()
        if not available:
            raise CliError(f"the {requested} sandbox backend cannot start here",
                           "for docker, `make sandbox-image` starts an engine and builds its "
                           "image; or use --sandbox auto", EXIT_USAGE)


def choose_sandbox(name: str) -> None:
    """`check_sandbox`, then say on stderr, in one line, which backend runs the harness."""
    from harness_learning.harnesses.sandbox.backend import choice_line

    check_sandbox(name)
    console.print(choice_line(), markup=False, highlight=False)
