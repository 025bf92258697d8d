"""`harness-learn bench reliability`: registered, and its summary counts what the scenarios
report (a not-contained case and a lost record show up in the figures)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning_lab.reliability.bench import summarise, table

pytestmark = pytest.mark.reliability


def test_command_is_registered():
    result = CliRunner().invoke(app, ["bench", "reliability", "--help"])
    assert result.exit_code == 0 and "--json" in result.output


def test_summary_counts_failures():
    hostile = [{"case": "a", "category": "escape", "contained": True, "recorded": True},
               {"case": "b", "category": "escape", "contained": False, "recorded": True},
               {"case": "c", "category": "escape", "skipped": "needs bubblewrap"}]
    proposals = [{"case": "p", "kind": "malformed", "ok": True},
                 {"case": "h", "kind": "reward_hacking", "ok": True}]
    faults = [{"mode": "clean", "resumed": False, "completed": True, "records_lost": 0,
               "infra_errors_injected": 0, "infra_errors_scored_wrong": 0, "matches_clean": True},
              {"mode": "x", "resumed": True, "completed": True, "records_lost": 2,
               "infra_errors_injected": 5, "infra_errors_scored_wrong": 1, "matches_clean": False}]
    crash = {"kills": 5, "resumes_tried": 1, "resumes_matched": 1, "records_lost": 0,
             "unsound_after_kill": []}
    workers = {"worker_kills": 2, "completed": True}
    bad = [{"clear": True, "unchanged": False}]
    f = summarise(hostile, proposals, faults, crash, workers, bad, 1.0)
    assert (f["hostile_cases"], f["hostile_contained"], f["hostile_skipped"]) == (3, 2, 1)
    assert f["not_contained"] == ["b"]
    assert (f["resumes_tried"], f["resumes_matched"]) == (2, 1)
    assert f["records_lost"] == 2 and f["infra_errors_scored_wrong"] == 1
    assert f["bad_data_files_changed"] == 1
    assert "2/3 contained" in table(f)
    assert "2, run completed" in table(f) and "5 (5)" in table(f)
    stopped = summarise(hostile, proposals, faults, {**crash, "kills": 3, "kills_asked": 5},
                        {**workers, "completed": False}, bad, 1.0)
    assert "3 (5)" in table(stopped) and "run NOT completed" in table(stopped)


def test_summary_reports_each_class_on_its_own():
    hostile = [{"case": "s", "category": "candidate_limits", "contained": True, "recorded": True},
               {"case": "n", "category": "bridge_bounds", "contained": False, "recorded": True}]
    proposals = [{"case": "m", "kind": "memorisation", "ok": True}]
    crash = {"kills": 0, "resumes_tried": 0, "resumes_matched": 0, "records_lost": 0,
             "unsound_after_kill": []}
    f = summarise(hostile, proposals, [], crash, {"worker_kills": 0, "completed": True}, [], 1.0)
    assert f["hostile_by_category"] == {"bridge_bounds": {"tried": 1, "contained": 0},
                                        "candidate_limits": {"tried": 1, "contained": 1},
                                        "memorisation": {"tried": 1, "contained": 1}}
    assert f["not_contained"] == ["n"]
    assert "hostile: memorisation" in table(f) and "0/1 contained" in table(f)


def test_summary_reports_the_hostile_catalogue_per_backend():
    hostile = [{"case": "a", "category": "escape", "contained": True, "recorded": True,
                "backend": "local"},
               {"case": "a", "category": "escape", "contained": True, "recorded": True,
                "backend": "docker"},
               {"case": "b", "category": "escape", "contained": False, "recorded": True,
                "backend": "docker"}]
    crash = {"kills": 0, "resumes_tried": 0, "resumes_matched": 0, "records_lost": 0,
             "unsound_after_kill": []}
    f = summarise(hostile, [], [], crash, {"worker_kills": 0, "completed": True}, [], 1.0)
    assert f["hostile_by_backend"] == {"docker": {"tried": 2, "contained": 1},
                                       "local": {"tried": 1, "contained": 1}}
    assert f["not_contained"] == ["docker:b"]
    lines = {" ".join(line.split()) for line in table(f).splitlines()}
    assert {"hostile on docker 1/2 contained", "hostile on local 1/1 contained"} <= lines
