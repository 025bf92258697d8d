"""`harness-learn run` end to end with the real local model."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from harness_learning.cli import app


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


def run_on(sim_url: str, sandbox: str, **env: str):
    """`run` of one problem on the simulated endpoint through the installed entry point."""
    from cli_run import cli

    return cli("run", "--task", "rg:basic_arithmetic", "--n", "1", "--model",
               f"openai/sim@{sim_url}", "--sandbox", sandbox, "--json",
               env={**os.environ, **env})


def test_run_says_in_one_line_which_sandbox_runs_the_harness(sim_url):
    from harness_learning.harnesses.sandbox.backend import applied, get_backend

    result = run_on(sim_url, "local", HARNESS_SANDBOX="docker")  # the flag wins over the env
    assert result.returncode == 0, result.stderr[-2000:]
    count = applied(get_backend("local").protections())
    lines = [line for line in result.stderr.splitlines() if line.startswith("sandbox: ")]
    assert lines == [f"sandbox: local (as asked; {count} protections applied)"], result.stderr
    assert "sandbox:" not in result.stdout  # the results and the JSON line are unchanged


def test_run_on_the_docker_backend_when_asked(sim_url):
    from docker_engine import require_engine

    require_engine()
    result = run_on(sim_url, "docker")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "sandbox: docker (as asked; " in result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["completed_fraction"] == 1.0


def test_an_unknown_sandbox_is_one_error_line():
    from cli_run import cli, error_line

    result = cli("run", "--task", "rg:basic_arithmetic", "--n", "1", "--model",
                 "openai/x@http://127.0.0.1:9/v1", "--sandbox", "vm")
    line = error_line(result)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "unknown sandbox backend 'vm'" in line and " · hint: " in line, line


def test_adapt_refuses_an_unknown_sandbox_before_writing_anything(tmp_path):
    from cli_run import cli, error_line

    dead = "openai/x@http://127.0.0.1:9/v1"
    result = cli("adapt", "--task", "rg:basic_arithmetic", "--run-dir", tmp_path / "run",
                 "--solver", dead, "--proposer", dead, "--sandbox", "vm")
    assert result.returncode == 2 and "unknown sandbox backend 'vm'" in error_line(result)
    assert not (tmp_path / "run").exists()
