"""`--tools mcp:COMMAND ...` end to end: `harness-learn run` evaluates a harness calling a real
stdio MCP server's tool (as `tools.add` and through `tools.langchain_tools()`) with the real
local Solver; a server that does not start is one line and exit code 2."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app
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
def test_adapt_a_harness_calling_an_mcp_tool(local_model_url, tmp_path, monkeypatch,
                                             capsys) -> None:
    """One round with the real local models (SmolLM2-135M as Solver and Proposer): the start
    harness's evaluations call the server's tool, and every problem is solved through it. The
    server is named as a user would, `mcp:python3 server.py` from its folder: the run keeps
    it, so from another directory, the original gone, the run's tools still open (as resume
    and eval open them), and export's "run it" line carries the run's --metric and --tools."""
    import shutil

    from harness_learning.cli.main import main
    from harness_learning.graphs.adapter.inputs import open_tools
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.harnesses.mcptools import McpServer
    from harness_learning.harnesses.rundir import RunDir

    work, elsewhere, run_dir = tmp_path / "work", tmp_path / "elsewhere", tmp_path / "run"
    shutil.copytree(HERE, work)
    elsewhere.mkdir()
    monkeypatch.chdir(work)
    try:
        result = CliRunner().invoke(app, [
            "adapt", "--task", "sums.jsonl", "--metric", "exact", "--harness", "harness.py",
            "--tools", "mcp:python3 server.py", "--run-dir", str(run_dir),
            "--proposer", "local:smollm2-135m", "--proposer-max-tokens", "48", "--rounds", "1",
            "--candidates", "1", "--feedback", "2", "--selection", "2", "--concurrency", "2",
            "--report-chars", "2000", "--json"])
        held = list(McpServer._shared)  # the session that checked the original was closed
    finally:
        close_servers()
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["rounds"] == 1
    kept = run_dir / "inputs" / "server.py"
    assert held == [f"mcp:{shlex.join(['python3', str(kept.resolve())])}"], held
    with RunDir(run_dir).open_store() as store:
        start = store.lineage()[0].sha
        seed = [e.result for e in store.iter_evaluations(sha=start)
                if e.purpose in ("feedback", "selection")]
    assert seed and all(r.score == 1.0 for r in seed), [(r.answer, r.error) for r in seed]
    tools = [c for r in seed for c in r.calls if c.tool == "tool"]
    assert len(tools) == 2 * len(seed)  # tools.add, then the LangChain tool, per problem
    assert {c.args["name"] for c in tools} == {"add"} and all(c.error is None for c in tools)

    assert kept.read_text() == (HERE / "server.py").read_text()
    monkeypatch.chdir(elsewhere)
    shutil.rmtree(work)
    try:
        reopened = open_tools(load_config(run_dir))
        assert asyncio.run(reopened.call("add", {"a": 2, "b": 5})).result == 7
        assert [str(kept.resolve()) in ref for ref in McpServer._shared] == [True]
    finally:
        close_servers()
    with pytest.raises(SystemExit) as exited:
        main(["export", str(run_dir), "--out", "exported.py"])
    assert exited.value.code == 0
    line = "harness-learn run --task sums.jsonl --harness exported.py --metric exact " \
           "--tools 'mcp:python3 server.py'"
    assert f"# run it: {line}\n" in (elsewhere / "exported.py").read_text()
    assert f"run it: {line}" in capsys.readouterr().err  # the console: stderr


def test_a_server_that_does_not_start_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    from harness_learning.cli.errors import EXIT_USAGE
    from harness_learning.cli.main import main

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


ADD_ONLY = """
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    def add(state):
        a, b = (int(w) for w in state["question"].split(" + "))
        return {"answer": str(tools.add(a=a, b=b))}

    graph = StateGraph(State)
    graph.add_node("add", add)
    graph.add_edge(START, "add")
    graph.add_edge("add", END)
    return graph
"""


def test_load_harness_takes_an_mcp_reference_and_warns_or_refuses_without_it(tmp_path) -> None:
    """`tools=["mcp:python3 server.py"]`, relative, as `--tools` takes it; a harness calling a
    tool it is not given warns, or with strict_tools refuses, naming the tool."""
    import os
    import warnings

    from harness_learning.graphs.serving.embed import load_harness
    from harness_learning.harnesses.usertools import ToolSetupError

    harness = tmp_path / "add_only.py"
    harness.write_text(ADD_ONLY)
    here = Path.cwd()
    os.chdir(HERE)
    try:
        graph = load_harness(harness, tools=["mcp:python3 server.py"], strict_tools=True)
        assert graph.invoke({"question": "2 + 40"})["answer"] == "42"
    finally:
        os.chdir(here)
        close_servers()
    with pytest.raises(ToolSetupError, match=r"add_only.py: the harness calls tools.add, which "
                                             r"was not given \(tools given: none\)"):
        load_harness(harness, strict_tools=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_harness(harness)
    assert [str(w.message).count("tools.add") for w in caught] == [1]
    assert caught[0].filename == __file__  # pointed at the caller's line


def test_a_harness_calling_a_tool_it_was_not_given_is_one_line_and_exit_2(tmp_path,
                                                                          capsys) -> None:
    from harness_learning.cli.errors import EXIT_USAGE
    from harness_learning.cli.main import main

    for command in (["run"], ["adapt", "--run-dir", str(tmp_path / "run")]):
        with pytest.raises(SystemExit) as exit_info:
            main([*command, "--task", str(HERE / "sums.jsonl"), "--metric", "exact",
                  "--harness", str(HERE / "harness.py")])
        [line] = capsys.readouterr().err.strip().splitlines()
        assert exit_info.value.code == EXIT_USAGE, line
        assert "the harness calls tools.add, tools.langchain_tools(), which were not given" in line
    assert not (tmp_path / "run").exists()
