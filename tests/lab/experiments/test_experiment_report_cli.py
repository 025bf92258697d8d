"""`harness-learn experiment report DIR`: a directory that is not an experiment's output is one
line and a non-zero exit, and nothing is written into it."""

from __future__ import annotations

from cli_run import cli, error_line


def test_report_needs_the_output_directory():
    result = cli("experiment", "report", timeout=120)
    assert result.returncode != 0
    assert "needs the output directory" in result.stderr


def test_a_directory_without_runs_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / "notes.txt").write_text("kept", encoding="utf-8")
    result = cli("experiment", "report", tmp_path, timeout=120)
    assert result.returncode != 0
    assert "holds no runs/ directory" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert error_line(result)
