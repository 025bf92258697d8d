"""The `harness-learn` console entry point: the Typer app (`cli.app`), whose failures
end as one line and an exit code (`cli.errors`)."""

from __future__ import annotations

import sys
import traceback

from harness_learning.cli.errors import (
    DEBUG_FLAG,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    classify,
    report,
)


def main(argv: list[str] | None = None) -> None:
    """The `harness-learn` entry point: the Typer app, with errors turned into one line each."""
    from harness_learning.cli import app

    args = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in args
    args = [a for a in args if a != DEBUG_FLAG]
    try:
        code = app(args, prog_name="harness-learn", standalone_mode=False)
    except SystemExit as exc:  # a command that exits on purpose (typer.Exit is not an error)
        if isinstance(exc.code, str):
            report(CliError(exc.code, "see `harness-learn --help`", EXIT_USAGE))
            raise SystemExit(EXIT_USAGE) from None
        raise
    except KeyboardInterrupt:
        report(CliError("interrupted", "nothing finished is lost: `harness-learn resume RUN` "
                        "continues a run", EXIT_INTERRUPTED))
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # noqa: BLE001 - the command line's last word on any failure
        import typer

        if isinstance(exc, typer.Exit):
            raise SystemExit(exc.exit_code) from None
        if isinstance(exc, typer.Abort):
            report(CliError("aborted", "", EXIT_INTERRUPTED))
            raise SystemExit(EXIT_INTERRUPTED) from None
        error = classify(exc)
        if debug:
            traceback.print_exception(exc)
        report(error)
        raise SystemExit(error.code) from None
    raise SystemExit(code if isinstance(code, int) else 0)
