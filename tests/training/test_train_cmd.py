"""`harness-learn train ...` from the command line."""

import json

from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.training.config import GRPOOfflineConfig, GRPOOnlineConfig, SFTTrainConfig

runner = CliRunner()


def test_every_config_field_is_an_option_with_its_help():
    for name, cls in [("sft", SFTTrainConfig), ("grpo-offline", GRPOOfflineConfig),
                      ("grpo-online", GRPOOnlineConfig)]:
        result = runner.invoke(app, ["train", name, "--help"], env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        for field in cls.model_fields:
            assert "--" + field.replace("_", "-") in result.output, (name, field)


def test_grpo_offline_from_the_command_line(logged_run, tiny_dir, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, [
        "train", "grpo-offline", "--logs", str(logged_run), "--model", str(tiny_dir),
        "--out", str(out), "--max-steps", "1", "--batch-size", "2", "--no-lora",
        "--max-length", "256", "--no-save"])
    assert result.exit_code == 0, result.output
    assert "metrics:" in result.output and (out / "metrics.png").is_file()
    config = json.loads((out / "config.json").read_text())
    assert config["lora"] is False and config["max_steps"] == 1
    assert config["logs"] == [str(logged_run)]


def test_missing_log_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["train", "sft", "--logs", str(tmp_path)])
    assert result.exit_code != 0
    assert "log.sqlite" in result.output
