"""The approval gate from the command line: `adapt --approval` in a terminal shows the diff and
asks; off a terminal it stops with exit code 6 and `harness-learn approve` answers from another
shell. Runs against the simulated endpoint (tests/support/sim_adapt.py)."""

from __future__ import annotations

import os
import pty
from pathlib import Path

import sim_adapt
from cli_run import cli, error_line

from harness_learning.report import load_run

REASON = "MARK-B loses every answer"


def test_approval_in_a_terminal_shows_the_diff_and_asks(sim_url: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    leader, follower = pty.openpty()
    try:
        # Answers typed ahead: the terminal hands the process one line per read.
        os.write(leader, f"y\nn\n{REASON}\n".encode())
        result = cli(*sim_adapt.adapt_args(sim_url, str(run_dir), "--approval"), stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-1500:]
    assert result.stdout.count("Adopt candidate") == 2 and "Why not?" in result.stdout
    assert '+PROMPT = """MARK-A Solve' in result.stderr, "round 1's diff was shown"
    assert '+PROMPT = """MARK-B Solve' in result.stderr, "round 2's diff was shown"
    run = load_run(run_dir)
    one, two = run.rounds
    assert [c.outcome for c in one.candidates if c.proposal.valid] == ["adopted"]
    (rejected,) = [c for c in two.candidates if c.proposal.valid]
    assert rejected.outcome == "rejected" and REASON in rejected.reason
    assert run.current_sha == next(c.sha for c in one.candidates if c.outcome == "adopted")


def test_approval_off_a_terminal_waits_for_approve(sim_url: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    waiting = cli(*sim_adapt.adapt_args(sim_url, str(run_dir), "--approval"))
    assert waiting.returncode == 6, waiting.stderr[-1500:]
    line = error_line(waiting)
    assert line.startswith("harness-learn: error: round 1 waits for approval of candidate")
    assert f"harness-learn approve {run_dir}" in line and "--reject REASON" in line

    approved = cli("approve", run_dir)  # round 1 adopted; round 2 asks again
    assert approved.returncode == 6 and "approved candidate" in approved.stderr
    assert error_line(approved).startswith("harness-learn: error: round 2 waits for approval")

    rejected = cli("approve", run_dir, "--reject", REASON)
    assert rejected.returncode == 0, rejected.stderr[-1500:]
    assert "stopped: finished 2 rounds" in rejected.stdout

    none_left = cli("approve", run_dir)
    assert none_left.returncode == 2 and "waits for no approval" in error_line(none_left)
    one, two = load_run(run_dir).rounds
    assert one.decision.chosen_sha != one.decision.current_sha
    assert two.decision.chosen_sha == two.decision.current_sha
    assert two.decision.reason == f"rejected by reviewer: {REASON}"
