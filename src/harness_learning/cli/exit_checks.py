"""What an evaluation or a run came to, said so a person can act on it: unscored problems are
counted as such (never averaged in as zeros), and a harness that never ran or an endpoint that
never answered ends the command with its own exit code (cli/errors.py)."""

from __future__ import annotations

from typing import Any

from harness_learning.cli.errors import (
    EXIT_BUDGET,
    EXIT_INVALID,
    EXIT_UNREACHABLE,
    SANDBOX_HINT,
    CliError,
    names_sandbox,
    one_line,
    unreachable,
)


def score_line(summary: dict[str, Any]) -> str:
    """`mean score 0.500 over 4 scored of 6 · 2 unscored (infra) · ...`"""
    n, scored = summary["n"], summary.get("scored", summary["n"])
    metrics = "".join(f" · {k.upper()} {summary[k]:.3f}" for k in ("em", "f1") if k in summary)
    mean = summary.get("mean_score")
    head = (f"mean score {mean:.3f} over {scored} scored of {n}" if mean is not None
            else f"no problem scored (0 of {n})")
    unscored = n - scored
    tail = f" · {unscored} unscored (infra: {summary['infra_errors']})" if unscored else ""
    return (f"{head}{metrics} · completed {summary['completed_fraction']:.0%}{tail}")


def check_evaluation(summary: dict[str, Any], model: str) -> None:
    """Fail the command when the numbers mean nothing: the harness is invalid, or the endpoint
    failed every problem."""
    n, first = summary["n"], one_line(summary.get("first_error") or "", 200)
    if n and summary.get("invalid") == n:
        raise CliError(f"the harness is invalid ({first})", "fix the harness source and rerun",
                       EXIT_INVALID)
    if n and summary.get("scored", n) == 0 and summary.get("infra_errors"):
        detail = first.partition(": ")[2]  # after the error kind
        if names_sandbox(detail):  # the evaluator's own words: no model was asked
            raise CliError(detail, SANDBOX_HINT, EXIT_UNREACHABLE)
        raise unreachable(model, "model", first)


def check_stop(stop_reason: str | None, run_dir: str) -> None:
    """A run that ended on a budget exits non-zero: what it did is kept, but it did not finish."""
    if stop_reason and "budget" in stop_reason:
        raise CliError(f"the run stopped early: {stop_reason}",
                       f"`harness-learn show {run_dir}` shows what it did; start a new run with a "
                       "larger budget to go further", EXIT_BUDGET)
