"""SIGKILL of a `harness-learn adapt` subprocess at seeded random moments, resumed after each
kill, ends where an uninterrupted run ends; both SQLite files pass integrity_check after every
kill; no stored evaluation is lost. Workers killed mid-problem cost only their problems."""

from __future__ import annotations

import pytest

from harness_learning_lab.reliability.crashes import kill_workers_midrun, run_crashes

pytestmark = pytest.mark.reliability


def test_killed_and_resumed_run_matches_the_uninterrupted_one(tmp_path):
    # More kills than a two-round run has evaluations to spread them over: every one is
    # still made (the last ones while a resumed process starts), not given up on.
    figures = run_crashes(tmp_path, kills=5, seed=1, rounds=2)
    assert figures["kills"] == figures["kills_asked"] == 5, figures
    assert figures["final_exit"] == 0, (tmp_path / "killed.log").read_text()[-3000:]
    assert figures["unsound_after_kill"] == []
    assert figures["integrity"] == {"log.sqlite": "ok", "checkpoints.sqlite": "ok"}
    assert figures["records_lost"] == 0
    assert figures["resumes_matched"] == 1, figures


def test_workers_killed_mid_problem_are_charged_and_the_run_goes_on(tmp_path):
    figures = kill_workers_midrun(tmp_path, kills=2)
    assert figures["worker_kills"] >= 1
    assert figures["completed"] and figures["integrity"] == "ok", figures
    assert figures["problems_charged"] >= 1, figures
