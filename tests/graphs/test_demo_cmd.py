"""The README's main job, `harness-learn demo`, and `eval` on its run, with the real local models
(Qwen2.5-Coder-1.5B proposes, SmolLM2-135M solves)."""

from __future__ import annotations

import json

import pytest
from harness_learning.graphs.cli import app
from typer.testing import CliRunner


def test_demo_without_the_proposer_model_names_the_fetch_command(tmp_path, monkeypatch, capsys):
    from harness_learning.graphs.cli.errors import EXIT_USAGE, main

    monkeypatch.setenv("HARNESS_LEARNING_MODELS", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--run-dir", str(tmp_path / "demo")])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == EXIT_USAGE and line.startswith("harness-learn: error: ")
    assert "run `harness-learn models fetch qwen2.5-coder-1.5b` once" in line
    assert not (tmp_path / "demo").exists()


@pytest.mark.slow
def test_demo_adapts_tests_and_eval_rereads_the_run(local_model_url, tmp_path):
    run_dir = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--run-dir", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    assert "held-out: seed" in result.output and "held-out answers of version" in result.output
    assert "adopted diff:" in result.output and "outcome" in result.output
    last = json.loads(result.output.strip().splitlines()[-1])
    assert set(last) >= {"adopted", "seed_test", "final_test", "rounds", "wall_s"}
    assert last["rounds"] == 3 and 0 <= last["adopted"] <= 3 and last["wall_s"] > 0
    assert 0.0 <= last["seed_test"] <= 1.0 and 0.0 <= last["final_test"] <= 1.0
    assert (run_dir / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "adopted.diff").exists() and (run_dir / "config.json").exists()

    again = CliRunner().invoke(app, ["eval", str(run_dir), "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output.strip().splitlines()[-1])
    assert summary["rounds"] == 3 and [r["round"] for r in summary["per_round"]] == [0, 1, 2, 3]
    assert all(0.0 <= r["test"] <= 1.0 for r in summary["per_round"])
    bad = CliRunner().invoke(app, ["eval", str(run_dir), "--split", "feedback"])
    assert bad.exit_code == 2 and "held-out test split" in bad.output
