"""What a run shows while it runs, what its estimate promises, and extending a finished run.

A real adaptation (SmolLM2-135M as Solver and Proposer, the real sandbox and log) is run for
1 round through the installed entry point, then `resume --rounds 2` makes round 2: the
extension is a decision in the run's log, and any other changed setting is refused by name.
The estimate printed before a run must hold as an upper bound and mean something:
estimate / 3 <= spent <= estimate, for this run, the simulated run (tests/graphs/conftest.py)
and the demo (test_demo_cmd.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_run import cli, error_line

from harness_learning.graphs.adapter.estimate import estimate_budget
from harness_learning.graphs.adapter.run import load_config
from harness_learning.harnesses.contract import SOLVER_OPS
from harness_learning.harnesses.rundir import RunDir

pytestmark = pytest.mark.timeout(900)
SMOL = "local:smollm2-135m"


def adapt_args(run_dir: Path) -> list:
    """The Proposer's prompt (~1,900 tokens) and completion are most of each round's time on
    CPU: the completion stops at 64 tokens (a candidate line is printed and judged, valid or
    not, either way) and the prompt leaves out the building-block menu, which no check here
    reads. Eight selection problems hold enough unseen ones for the memorisation probe (no
    control problems), and the 12-problem pool gives rounds 1 and 2 disjoint feedback, so the
    run spends at least a third of its estimate even when no candidate is valid."""
    return ["adapt", "--task", "rg:basic_arithmetic", "--run-dir", run_dir, "--solver", SMOL,
            "--proposer", SMOL, "--rounds", "1", "--candidates", "1", "--feedback", "2",
            "--selection", "8", "--dev", "12", "--test", "2", "--proposer-max-tokens", "64",
            "--no-block-menu", "--concurrency", "2"]


def spent_calls(run_dir: Path, *, without_tests: bool = False) -> tuple[int, int]:
    """(Solver calls, Proposer calls) the run's log holds; `without_tests`: leaving out the
    held-out test evaluations a later `eval` made (no part of the adaptation's estimate)."""
    with RunDir(run_dir).open_store() as store:
        spent = store.spent()
        tests = sum(1 for ev in store.iter_evaluations(purpose="test")
                    for call in ev.result.calls if call.tool in SOLVER_OPS)
    return spent["solver_calls"] - (tests if without_tests else 0), spent["proposer_calls"]


def assert_bound_holds(estimate, solver: int, proposer: int) -> None:
    assert estimate.solver_calls / 3 <= solver <= estimate.solver_calls, (estimate, solver)
    assert estimate.proposer_calls / 3 <= proposer <= estimate.proposer_calls, (estimate, proposer)


@pytest.fixture(scope="module")
def extended(local_model_url, tmp_path_factory):
    """(run dir, the 1-round adapt, resume with a changed --metric, resume --rounds 2)."""
    run_dir = tmp_path_factory.mktemp("extend") / "run"
    first = cli(*adapt_args(run_dir))
    assert first.returncode == 0, first.stderr[-3000:]
    refused = cli("resume", run_dir, "--rounds", "2", "--metric", "f1")
    second = cli("resume", run_dir, "--rounds", "2", "--json")
    return run_dir, first, refused, second


@pytest.mark.slow
def test_adapt_prints_a_line_per_judged_candidate(extended):
    _, first, _, second = extended
    lines = [line for line in first.stderr.splitlines() if line.startswith("round 1 · candidate")]
    assert len(lines) == 1, first.stderr[-3000:]  # 1 Proposer candidate, no operators
    assert " · proposer · " in lines[0] and "spent: Solver calls " in lines[0]
    assert ("valid · selection " in lines[0]) != ("invalid (" in lines[0])
    assert not any(" · candidate " in line for line in second.stderr.splitlines()), \
        "--json prints no candidate lines"


@pytest.mark.slow
def test_resume_refuses_a_changed_setting_by_name(extended):
    run_dir, _, refused, _ = extended
    line = error_line(refused)
    assert refused.returncode == 2 and "metric: 'f1' != None" in line, line
    assert "rounds" not in line.split(" · hint")[0], "the rounds are no refused change"


@pytest.mark.slow
def test_resume_rounds_extends_a_finished_run_as_a_logged_decision(extended):
    run_dir, _, _, second = extended
    assert second.returncode == 0, second.stderr[-3000:]
    assert "extending the run: rounds 1 -> 2" in second.stderr
    summary = json.loads(second.stdout.strip().splitlines()[-1])
    assert summary["rounds"] == 2 and summary["stop_reason"] == "finished 2 rounds"
    assert load_config(run_dir).rounds == 2
    with sqlite3.connect(run_dir / "log.sqlite") as db:
        events = [(kind, json.loads(payload)) for kind, payload in db.execute(
            "SELECT kind, payload FROM events WHERE kind IN ('run_extended', 'run_finished') "
            "ORDER BY seq")]
        decided = sorted(r for (r,) in db.execute("SELECT round FROM decisions"))
    assert [kind for kind, _ in events] == ["run_finished", "run_extended", "run_finished"]
    assert events[1][1]["changes"] == {"rounds": [1, 2]} and events[1][1]["after_round"] == 1
    assert decided == [1, 2]


@pytest.mark.slow
def test_the_estimate_bounds_a_real_run(extended):
    run_dir = extended[0]
    config = load_config(run_dir)
    assert_bound_holds(estimate_budget(config), *spent_calls(run_dir))


def test_the_estimate_bounds_the_simulated_run(sim_run):
    assert_bound_holds(estimate_budget(load_config(sim_run)),
                       *spent_calls(sim_run, without_tests=True))
