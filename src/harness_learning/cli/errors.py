"""How the command line fails: one line on stderr that says what went wrong and what to do, and
an exit code a script can branch on. The traceback is printed only with `--debug` (anywhere on
the command line), because its last line is all a user needs and it buries that line.

Exit codes: 1 an unexpected error, 2 bad input, 3 an invalid harness, 4 an unreachable or failing
model endpoint or log database, 5 a budget stop, 6 a run waiting for a person's approval, 130
interrupted.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness_learning.harnesses.llm import ModelConfig

EXIT_ERROR, EXIT_USAGE, EXIT_INVALID, EXIT_UNREACHABLE, EXIT_BUDGET, EXIT_WAITING = 1, 2, 3, 4, 5, 6
EXIT_INTERRUPTED = 130
DEBUG_FLAG = "--debug"
LINE_CHARS = 400


class CliError(Exception):
    """An error the command line reports as one line with a hint and exits `code`."""

    def __init__(self, message: str, hint: str = "", code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message, self.hint, self.code = message, hint, code


def one_line(text: object, limit: int = LINE_CHARS) -> str:
    """One line a terminal may show (an error may quote a harness's escape codes)."""
    from harness_learning.harnesses.text_safety import for_terminal

    text = " ".join(for_terminal(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def endpoint_of(model: str | ModelConfig) -> str:
    """The URL(s) a model spec talks to, for naming them in an error."""
    from harness_learning.harnesses.llm import ModelConfig

    try:
        config = ModelConfig.coerce(model)
    except (ValueError, TypeError):
        return str(model)
    if config.endpoints:
        return ", ".join(config.endpoints)
    if config.model == "local" or str(model) == "local":
        from harness_learning.harnesses.llm import LOCAL_URL_ENV

        return os.environ.get(LOCAL_URL_ENV) or "the local model server (started on loopback)"
    return f"{config.model} (litellm's default endpoint for it)"


SANDBOX_HINT = ("the sandbox backend could not run the harness: --sandbox local or docker "
                "picks another; --debug shows the traceback")


def names_sandbox(detail: str) -> bool:
    """Whether a failure's text is the evaluator's own words for a sandbox that did not start
    or failed (`harnesses.results.SANDBOX_FAILED`): then no model was asked."""
    from harness_learning.harnesses.results import SANDBOX_FAILED

    return any(detail.startswith(words) or f": {words}" in detail for words in SANDBOX_FAILED)


def unreachable(model: str | ModelConfig, role: str, detail: str, flag: str = "--model",
                run_dir: str | None = None) -> CliError:
    """An endpoint that did not answer, named by its URL; or the sandbox, when the failure is
    one that never reached the model."""
    again = f"`harness-learn resume {run_dir}` continues the run" if run_dir else "rerun"
    if names_sandbox(detail):
        return CliError(detail, f"{SANDBOX_HINT}; then {again}", EXIT_UNREACHABLE)
    return CliError(f"the {role} endpoint {endpoint_of(model)} failed: {detail}",
                    f"check that the server is up and the URL is right ({flag} MODEL@URL); "
                    f"then {again}", EXIT_UNREACHABLE)


def classify(exc: BaseException) -> CliError:
    """The one line and exit code for an exception that reached the command line."""
    from harness_learning.harnesses.compiler import HarnessInvalid
    from harness_learning.harnesses.store import LogStoreError, RunLocked, StoreUnreachable

    if isinstance(exc, CliError):
        return exc
    if _is_usage_error(exc):  # typer's (vendored) click: usage errors carry their context
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "harness-learn"
        return CliError(exc.format_message(), f"see `{command} --help`", EXIT_USAGE)
    if isinstance(exc, HarnessInvalid):
        return CliError(f"invalid harness: {exc}", "fix the harness source; `harness-learn run "
                        "--harness FILE --n 1` checks it", EXIT_INVALID)
    if isinstance(exc, StoreUnreachable):  # what was committed is kept: resume continues
        return CliError(str(exc), "check that the database server is up and the URL right "
                        "(--store URL; a password comes from the URL or its ?passfile=PATH); "
                        "then `harness-learn resume RUN --store URL` continues a run",
                        EXIT_UNREACHABLE)
    if isinstance(exc, LogStoreError) and isinstance(getattr(exc, "hint", None), str):
        # refusals that say themselves what to do: a store not given, a foreign checkpoint
        return CliError(str(exc), exc.hint, EXIT_USAGE)
    if isinstance(exc, RunLocked):
        return CliError(str(exc), "wait for it to finish or stop it; `harness-learn show RUN` "
                        "reads a run while it runs", EXIT_USAGE)
    if isinstance(exc, LogStoreError):
        return CliError(str(exc), "use a run directory written by this version, or a new "
                        "--run-dir", EXIT_USAGE)
    hint = getattr(exc, "hint", None)
    if isinstance(hint, str) and isinstance(getattr(exc, "unreachable", None), bool):
        # the lab's problems (a Ray cluster's), raised where this module may not be imported
        return CliError(str(exc), hint, EXIT_UNREACHABLE if exc.unreachable else EXIT_USAGE)
    if type(exc).__name__ == "InfraStop":
        return CliError(str(exc), SANDBOX_HINT if names_sandbox(str(exc))
                        else "check the model endpoint", EXIT_UNREACHABLE)
    if isinstance(exc, FileNotFoundError) and isinstance(hint, str) and hint:
        return CliError(str(exc), hint, EXIT_USAGE)  # a missing file that knows its own fix
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return CliError(str(exc), "check the path; a run directory is the --run-dir given to "
                        "`harness-learn adapt`", EXIT_USAGE)
    if isinstance(exc, LookupError | ValueError):
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        return CliError(str(text), "check the values given on the command line (--help lists "
                        "them)", EXIT_USAGE)
    return CliError(f"unexpected error: {type(exc).__name__}: {exc}",
                    f"rerun with {DEBUG_FLAG} for the traceback and report it", EXIT_ERROR)


def _is_usage_error(exc: BaseException) -> bool:
    """click's UsageError, whichever copy of click raised it (typer ships its own)."""
    return any(k.__name__ == "UsageError" for k in type(exc).__mro__) and hasattr(
        exc, "format_message")


def report(error: CliError) -> None:
    hint = f" · hint: {one_line(error.hint, 240)}" if error.hint else ""
    print(f"harness-learn: error: {one_line(error.message)}{hint}", file=sys.stderr, flush=True)
