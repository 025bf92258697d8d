"""CLI progress: a bar on a terminal, plain lines elsewhere (CI logs, nohup, pipes)."""

from __future__ import annotations

import io

from rich.console import Console

from harness_learning.graphs.cli import _common


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
