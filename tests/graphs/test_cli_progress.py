"""CLI progress: a bar on a terminal, plain lines elsewhere (CI logs, nohup, pipes)."""

from __future__ import annotations

import io

from rich.console import Console

from harness_learning.cli import _common


def lines_for(total: int, monkeypatch) -> list[str]:
    buffer = io.StringIO()
    monkeypatch.setattr(_common, "console", Console(file=buffer, force_terminal=False, width=200))
    with _common.progress("evaluating", total) as advance:
        for _ in range(total):
            advance()
    return buffer.getvalue().splitlines()


def test_off_a_terminal_progress_is_a_line_every_tenth(monkeypatch):
    lines = lines_for(100, monkeypatch)
    assert lines == [f"evaluating: {n}/100" for n in range(10, 101, 10)]
    assert lines_for(3, monkeypatch) == ["evaluating: 1/3", "evaluating: 2/3", "evaluating: 3/3"]
    assert lines_for(25, monkeypatch)[-1] == "evaluating: 25/25"


def test_on_a_terminal_progress_is_a_bar(monkeypatch):
    buffer = io.StringIO()
    monkeypatch.setattr(_common, "console", Console(file=buffer, force_terminal=True, width=80))
    with _common.progress("evaluating", 4) as advance:
        for _ in range(4):
            advance()
    assert "evaluating: 4/4" not in buffer.getvalue() and "evaluating" in buffer.getvalue()


CANDIDATE = {"round": 1, "index": 2, "origin": "operator:interpreter", "valid": True,
             "selection_score": 0.625, "parent_score": 0.5, "invalid_kind": None,
             "reward": 0.8, "spent": {"solver_calls": 34, "proposer_calls": 3}}


def test_a_judged_candidate_is_one_line_with_its_verdict_and_the_spend():
    from harness_learning.cli.live import candidate_line

    assert candidate_line(CANDIDATE) == ("round 1 · candidate 2 · operator:interpreter · valid · "
                                         "selection 0.625 vs current 0.500 · spent: Solver "
                                         "calls 34, Proposer calls 3")
    refused = {**CANDIDATE, "origin": "proposer", "valid": False, "selection_score": None,
               "invalid_kind": "unmatched_search"}
    assert candidate_line(refused) == ("round 1 · candidate 2 · proposer · invalid "
                                       "(unmatched_search) · spent: Solver calls 34, Proposer "
                                       "calls 3")
    hostile = candidate_line({**refused, "invalid_kind": "x\x1b[2J\ny"})
    assert "\x1b" not in hostile and "\n" not in hostile


def live_output(monkeypatch, terminal: bool, lines: bool = True) -> str:
    from harness_learning.cli import live

    buffer = io.StringIO()
    monkeypatch.setattr(live, "console", Console(file=buffer, force_terminal=terminal,
                                                 width=200))
    config = type("Config", (), {"rounds": 2})()
    with live.LiveView(config, bound=40, spent_before=4, lines=lines) as view:
        view.on_progress("problem", {"score": 1.0, "tokens": 9, "calls": 2, "solver_calls": 2})
        view.on_progress("candidate", CANDIDATE)
        view._live.refresh()
    return buffer.getvalue()


def test_the_live_view_prints_candidate_lines_and_on_a_terminal_a_bar(monkeypatch):
    piped = live_output(monkeypatch, terminal=False)
    assert piped.splitlines() == [
        "round 1 · candidate 2 · operator:interpreter · valid · selection 0.625 vs current "
        "0.500 · spent: Solver calls 34, Proposer calls 3"]
    drawn = live_output(monkeypatch, terminal=True)
    assert "Solver calls 34 of at most ~40 (the estimate)" in drawn and "━" in drawn
    quiet = live_output(monkeypatch, terminal=False, lines=False)
    assert "candidate 2" not in quiet
