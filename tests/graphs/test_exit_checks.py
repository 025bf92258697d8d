"""An evaluation whose every problem failed for infrastructure names what failed: the sandbox
backend when the harness never started (no model was asked), the model endpoint otherwise."""

from __future__ import annotations

import pytest

from harness_learning.cli.errors import EXIT_UNREACHABLE, CliError
from harness_learning.cli.exit_checks import check_evaluation


def _all_unscored(first_error: str) -> dict:
    return {"n": 3, "scored": 0, "infra_errors": 3, "first_error": first_error}


def test_a_sandbox_that_did_not_start_is_named_not_the_model():
    with pytest.raises(CliError) as failed:
        check_evaluation(_all_unscored("infra: the sandbox did not start: bwrap: No permissions"),
                         "local")
    assert failed.value.message.startswith("the sandbox did not start: bwrap")
    assert "endpoint" not in failed.value.message and "--sandbox" in failed.value.hint
    assert failed.value.code == EXIT_UNREACHABLE


def test_an_endpoint_that_failed_every_problem_is_named():
    with pytest.raises(CliError) as failed:
        check_evaluation(_all_unscored("infra: [connection] Connection error."), "local")
    assert "endpoint" in failed.value.message and "--sandbox" not in failed.value.hint


def test_an_adaptation_stopped_by_the_sandbox_names_the_sandbox_not_the_endpoint():
    from harness_learning.cli.errors import classify, unreachable
    from harness_learning.graphs.adapter.nodes import InfraStop

    stopped = ("4 problem(s) failed for infrastructure reasons 2 times (last: basic_arithmetic/"
               "dev/15: the sandbox did not start: the worker exited with code 1)")
    for failed in (unreachable("local", "solver", stopped, "--solver", "runs/a"),
                   classify(InfraStop(stopped))):
        assert "endpoint" not in failed.message and "--sandbox" in failed.hint
        assert failed.code == EXIT_UNREACHABLE
    timed_out = stopped.replace("the sandbox did not start", "Timeout: model call")
    assert "endpoint" in unreachable("local", "solver", timed_out, "--solver").message
    assert "model endpoint" in classify(InfraStop(timed_out)).hint
