"""`--tools mcp:COMMAND ...` end to end: `harness-learn run` evaluates a harness calling a real
stdio MCP server's tool (as `tools.add` and through `tools.langchain_tools()`) with the real
local Solver; a server that does not start is one line and exit code 2."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness_learning.graphs.cli import app
from harness_learning.harnesses.mcptools import close_servers

HERE = Path(__file__).resolve().parents[1] / "support" / "mcp_sums"
SERVER = f"mcp:{shlex.join([sys.executable, str(HERE / 'server.py')])}"  # quoted: a path may hold spaces


@pytest.mark.slow
def test_run_evaluates_a_harness_calling_an_mcp_tool(local_model_url) -> None:
    try:
        result = CliRunner().invoke(app, [
            "run", "--task", str(HERE / "sums.jsonl"), "--metric", "exact",
            "--harness", str(HERE / "harness.py"), "--tools", SERVER, "--n", "4",
            "--concurrency", "2", "--json"])
    finally:
        close_servers()
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["n"] == summary["scored"] >= 3 and summary["mean_score"] == 1.0, summary
    assert summary["infra_errors"] == 0 and summary["tokens"] > 0  # the Solver answered too


@pytest.mark.slow
def test_adapt_a_harness_calling_an_mcp_tool(local_model_url, tmp_path) -> None:
    """One round with the real local models (SmolLM2-135M as Solver and Proposer): the start
    harness's evaluations call the server's tool, and every problem is solved through it."""
    from harness_learning.harnesses.rundir import RunDir

    run_dir = tmp_path / "run"
    try:
        result = CliRunner().invoke(app, [
            "adapt", "--task", str(HERE / "sums.jsonl"), "--metric", "exact",
            "--harness", str(HERE / "harness.py"), "--tools", SERVER, "--run-dir", str(run_dir),
            "--proposer", "local:smollm2-135m", "--proposer-max-tokens", "48", "--rounds", "1",
            "--candidates", "1", "--feedback", "2", "--selection", "2", "--concurrency", "2",
            "--report-chars", "2000", "--json"])
    finally:
        close_servers()
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["rounds"] == 1
    with RunDir(run_dir).open_store() as store:
        start = store.lineage()[0].sha
        seed = [e.result for e in store.iter_evaluations(sha=start)
                if e.purpose in ("feedback", "selection")]
    assert seed and all(r.score == 1.0 for r in seed), [(r.answer, r.error) for r in seed]
    tools = [c for r in seed for c in r.calls if c.tool == "tool"]
    assert len(tools) == 2 * len(seed)  # tools.add, then the LangChain tool, per problem
    assert {c.args["name"] for c in tools} == {"add"} and all(c.error is None for c in tools)


def test_a_server_that_does_not_start_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    from harness_learning.graphs.cli.errors import EXIT_USAGE
    from harness_learning.graphs.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--task", str(HERE / "sums.jsonl"), "--metric", "exact",
              "--harness", str(HERE / "harness.py"), "--tools", f"{SERVER} --crash"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == EXIT_USAGE
    assert line.startswith("harness-learn: error: tool mcp:") and "--crash" in line
    assert "did not start" in line and "refusing to start" in line
    with pytest.raises(SystemExit) as exit_info:
        main(["adapt", "--task", str(HERE / "sums.jsonl"), "--metric", "exact",
              "--run-dir", str(tmp_path / "run"), "--tools", f"{SERVER} --bad-name"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == EXIT_USAGE and "MCP tool 'get-time'" in line
    assert not (tmp_path / "run").exists()
