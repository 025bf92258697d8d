"""The README's main job, `harness-learn demo`, and `eval` on its run, with the real local model."""

from __future__ import annotations

import json

import pytest
from harness_learning.graphs.cli import app
from typer.testing import CliRunner


@pytest.mark.slow
def test_demo_adapts_tests_and_eval_rereads_the_run(local_model_url, tmp_path):
    run_dir = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "held-out: seed" in result.output and "held-out answers of version" in result.output
    assert (run_dir / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "adopted.diff").exists() and (run_dir / "config.json").exists()

    again = CliRunner().invoke(app, ["eval", str(run_dir), "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output.strip().splitlines()[-1])
    assert summary["rounds"] == 2 and [r["round"] for r in summary["per_round"]] == [0, 1, 2]
    assert all(0.0 <= r["test"] <= 1.0 for r in summary["per_round"])
    bad = CliRunner().invoke(app, ["eval", str(run_dir), "--split", "feedback"])
    assert bad.exit_code == 2 and "held-out test split" in bad.output
