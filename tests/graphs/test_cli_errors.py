"""Every command-line failure is one line with a hint and an exit code a script can branch on;
the traceback appears only under --debug. Run through the installed entry point, as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest
import sim_adapt
from cli_run import cli, error_line, free_port

BROKEN_HARNESS = "def build_graph(tools:\n"


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def cases(sim_url: str, sim_run: Path, tmp: Path) -> dict[str, tuple[list, int, str]]:
    """name -> (arguments, exit code, text the error line must hold)."""
    broken = tmp / "broken.py"
    broken.write_text(BROKEN_HARNESS)
    compiled = tmp / "compiled_agent.py"
    compiled.write_text("from langgraph.prebuilt import create_react_agent\n\n"
                        "graph = create_react_agent(model=None, tools=[])\n")
    dead = dead_url()
    sim = f"openai/sim@{sim_url}"
    return {
        "unknown command": (["frobnicate"], 2, "No such command 'frobnicate'"),
        "missing option": (["adapt", "--task", "rg:basic_arithmetic"], 2, "Missing option '--run-dir'"),
        "bad split": (["run", "--task", "rg:basic_arithmetic", "--split", "dev"], 2,
                      "split must be feedback or test"),
        "unknown task": (["run", "--task", "rg:nope"], 2, "unknown task 'rg:nope'"),
        "not a run dir": (["show", tmp / "nowhere"], 2, "not a run directory"),
        "unknown candidate": (["show", sim_run, "--candidate", "r9-c9"], 2, "no candidate 'r9-c9'"),
        "rollback to a missing round": (["rollback", sim_run, "7"], 2, "no round 7 in the lineage"),
        "approve with nothing pending": (["approve", sim_run], 2, "waits for no approval"),
        "no such harness": (["run", "--task", "rg:basic_arithmetic", "--harness", tmp / "none.py"],
                            2, "is not a seed (reasoning_direct"),
        "invalid harness": (["run", "--task", "rg:basic_arithmetic", "--n", "2", "--harness", broken,
                             "--model", sim], 3, "the harness is invalid (invalid: syntax"),
        "run, dead endpoint": (["run", "--task", "rg:basic_arithmetic", "--n", "1", "--model",
                                f"openai/x@{dead}"], 4, f"the model endpoint {dead} failed"),
        "adapt, dead endpoint": (sim_adapt.adapt_args(dead, str(tmp / "dead")), 4,
                                 f"the solver endpoint {dead} failed"),
        "focused edits on a compiled graph": ([*sim_adapt.adapt_args(
            sim_url, str(tmp / "focused")), "--harness", compiled, "--edit-format", "function"],
            2, "it is only a compiled `graph`"),
        "budget stop": ([*sim_adapt.adapt_args(sim_url, str(tmp / "budget")), "--max-solver-calls",
                         "1"], 5, "the run stopped early: solver-call budget 1 reached"),
    }


def test_each_bad_input_gets_one_line_a_hint_and_its_exit_code(sim_url, sim_run, tmp_path) -> None:
    for name, (args, code, text) in cases(sim_url, sim_run, tmp_path).items():
        result = cli(*args)
        line = error_line(result)
        assert result.returncode == code, f"{name}: exit {result.returncode}, {line}"
        assert line.startswith("harness-learn: error: ") and text in line, f"{name}: {line}"
        assert " · hint: " in line, f"{name}: no hint in {line}"
        assert "Traceback" not in result.stderr + result.stdout, name
    assert not (tmp_path / "focused").exists()  # refused before the run directory is written


def test_run_reports_unscored_problems_as_such(tmp_path) -> None:
    dead = dead_url()
    result = cli("run", "--task", "rg:basic_arithmetic", "--n", "2", "--model", f"openai/x@{dead}",
                 "--json")
    assert result.returncode == 4
    assert "no problem scored (0 of 2)" in result.stdout and "2 unscored (infra: 2)" in result.stdout
    assert '"mean_score": null' in result.stdout and "mean score 0.000" not in result.stdout


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(where: str, tmp_path) -> None:
    args = ["show", tmp_path / "nowhere"]
    result = cli(*(["--debug", *args] if where == "before" else [*args, "--debug"]))
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr and "NotARunError" in result.stderr
    assert error_line(result).startswith("harness-learn: error: ")
