"""`harness-learn experiment experiments/proposer_training.toml --smoke` end to end with the real
local models: teacher edits, SFT (or its named skip), one online GRPO step, GGUF export and every
arm's single-step edits of the held-out seed, tabled. Minutes on 2 cores; it checks that the
stages connect, not that they learn (the reduced and full configs measure that)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app

EXPERIMENT = Path(__file__).resolve().parents[3] / "experiments" / "proposer_training.toml"
ARMS = {"seed", "tool_loop", "base", "sft", "sft_rl", "teacher", "oracle"}


@pytest.mark.slow
def test_smoke_experiment_runs_every_stage_and_arm(tmp_path):
    out = tmp_path / "exp"
    result = CliRunner().invoke(app, ["experiment", str(EXPERIMENT), "--smoke", "--out", str(out),
                                      "--json"])
    assert result.exit_code == 0, result.output
    last = json.loads(result.output.strip().splitlines()[-1])
    assert set(last) == ARMS
    for arm, row in last.items():
        assert 0.0 <= row["mean"] <= 1.0 and "ci95" in row, arm
        assert (row["valid_rate"] is None) == (arm in {"seed", "tool_loop"}), arm
    table = json.loads((out / "proposer_table.json").read_text())
    assert set(table["arms"]) == ARMS and table["arms"]["sft_rl"]["edits"] == 2
    assert "| SFT+RL student |" in (out / "proposer_table.md").read_text()
    assert (out / "proposer_arms.png").read_bytes()[:4] == b"\x89PNG"

    stages = {s: json.loads((out / "stages" / s / "stage.json").read_text())
              for s in ("collect", "sft", "grpo", "export")}
    assert stages["collect"]["result"]["tasks"]["rg:basic_arithmetic"]["proposals"] == 1
    grpo = stages["grpo"]["result"]
    assert grpo["summary"]["step"] == 1 and Path(grpo["checkpoint"]).is_dir()
    student = Path(stages["export"]["result"]["gguf"]["sft_rl"])
    assert student.read_bytes()[:4] == b"GGUF"
