"""Endpoint faults during real adaptation runs (Solver and Proposer on the simulated server,
reached through litellm): each run completes, or stops with a clear error and completes on
resume; nothing stored is lost; no infrastructure error is scored as a wrong answer; and each
ends where the clean run ends."""

from __future__ import annotations

import pytest

from harness_learning_lab.reliability.faults import MODES, run_faults

pytestmark = pytest.mark.reliability


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return {r["mode"]: r for r in run_faults(tmp_path_factory.mktemp("faults"), list(MODES))}


@pytest.mark.parametrize("mode", list(MODES))
def test_run_completes_loses_nothing_and_scores_no_infra_error(rows, mode):
    row = rows[mode]
    assert row["completed"], row
    assert row["records_lost"] == 0, row
    assert row["infra_errors_scored_wrong"] == 0, row["scored_wrong_examples"]
    assert row["log_integrity"] == "ok"
    assert row["matches_clean"], (row["decisions"], rows["clean"]["decisions"])


def test_faults_were_really_injected(rows):
    assert rows["clean"]["infra_errors_injected"] == 0 and not rows["clean"]["stopped"]
    for mode in ("errors_20pct", "errors_50pct", "timeouts", "429_storm", "malformed"):
        assert rows[mode]["infra_errors_injected"] > 0, rows[mode]


def test_a_dead_endpoint_stops_the_run_with_a_clear_message_then_resume_finishes(rows):
    row = rows["dies_mid_run"]
    assert row["resumed"] and len(row["stopped"]) == 1
    assert row["stopped"][0].startswith(("InfraStop", "InfraError"))
    assert "resume" in row["stopped"][0] or "connection" in row["stopped"][0]
