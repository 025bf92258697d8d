"""`harness-learn run` end to end with the real local model."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from harness_learning.graphs.cli import app


def test_run_evaluates_a_seed_with_the_local_model(local_model_url):
    result = CliRunner().invoke(app, ["run", "--task", "rg:letter_counting", "--n", "2",
                                      "--model", "local", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["n"] == 2 and summary["completed_fraction"] == 1.0
    assert 0.0 <= summary["mean_score"] <= 1.0 and summary["infra_errors"] == 0
    assert "evaluating: 2/2" in result.output and "letter_counting/dev/0" in result.output


def test_run_rejects_an_unknown_split():
    result = CliRunner().invoke(app, ["run", "--task", "rg:letter_counting", "--split", "dev"])
    assert result.exit_code == 2 and "split must be feedback or test" in result.output
