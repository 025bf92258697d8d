"""The training configs are settings models like `AdaptConfig`: help on every field, checks
declared on the fields, unknown keys refused, and a bad flag one line naming it, exit 2."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from harness_learning.cli.main import main
from harness_learning.training.config import (
    DataConfig,
    GRPOOfflineConfig,
    GRPOOnlineConfig,
    SFTTrainConfig,
    SolverSFTConfig,
    TrainConfig,
)

CONFIGS = [DataConfig, TrainConfig, SFTTrainConfig, SolverSFTConfig, GRPOOfflineConfig,
           GRPOOnlineConfig]

SHARED = {"model": "smollm2", "out": "runs/train", "learning_rate": 1e-05, "max_steps": 10,
          "batch_size": 4, "max_length": 2048, "max_grad_norm": 1.0, "lora": True,
          "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "seed": 0, "save": True}
DATA = {"min_group_size": 2, "drop_flat_groups": True, "fold_duplicates": True,
        "scale_by_std": False}


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_has_its_help(cls) -> None:
    assert not [name for name, info in cls.model_fields.items() if not info.description]


def test_the_defaults_are_the_trainers_own() -> None:
    assert DataConfig().model_dump() == DATA
    assert TrainConfig().model_dump() == SHARED
    assert SFTTrainConfig().model_dump() == {
        **SHARED, "learning_rate": 2e-05, "num_epochs": 1.0, "teacher": [],
        "keep_ties": False, "bf16_cpu": False, "save_steps": 0}
    assert SolverSFTConfig().model_dump() == {
        **SHARED, "out": "runs/solver-sft", "learning_rate": 2e-04, "max_steps": -1,
        "max_length": 1024, "version": "final", "min_score": 1.0, "num_epochs": 2.0}
    assert GRPOOfflineConfig().model_dump() == {
        **DATA, **SHARED, "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0,
        "recompute_logprobs": False}
    online = GRPOOnlineConfig().model_dump()
    assert list(online)[:4] == list(DATA) and online == {
        **DATA, **SHARED, "task": "", "num_generations": 4, "max_completion_length": 256,
        "temperature": 1.0, "micro_batch_size": 0, "shared_prefix": True, "beta": 0.0,
        "loss_type": "dapo", "num_problems": 4, "concurrency": 4, "eval_timeout_s": 120.0,
        "solver": "local", "use_vllm": False, "log_dir": ""}


def test_an_unknown_key_is_refused_and_a_copy_is_validated(tmp_path) -> None:
    with pytest.raises(ValidationError, match="lerning_rate"):
        SFTTrainConfig(lerning_rate=1e-4)
    with pytest.raises(ValidationError, match="epsilon"):
        SFTTrainConfig().replace(epsilon=0.1)  # another trainer's field
    with pytest.raises(ValidationError, match="temperature"):
        GRPOOnlineConfig().replace(temperature=0.0)
    config = GRPOOnlineConfig(out=tmp_path).replace(max_steps=1)  # a Path is kept as text
    assert (config.out, config.max_steps, config.num_generations) == (str(tmp_path), 1, 4)
    assert json.loads(json.dumps(config.model_dump())) == config.model_dump()


@pytest.mark.parametrize(("flags", "says"), [
    (["sft", "--batch-size", "0"], "--batch-size: Input should be greater than or equal to 1 "
                                   "(got 0)"),
    (["grpo-online", "--num-generations", "1"], "--num-generations: Input should be greater "
                                                "than or equal to 2"),
    (["grpo-offline", "--model", "missing.gguf"], "--model: GGUF file missing.gguf does not "
                                                  "exist"),
    (["sft", "--teacher", "no-such-runs"], "--teacher: no such folder: no-such-runs"),
    (["solver-sft", "--lora-dropout", "1.5"], "--lora-dropout: Input should be less than 1"),
])
def test_a_bad_flag_is_one_line_naming_it_before_any_log_is_read(flags, says, tmp_path,
                                                                  capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:  # the log is missing too: the flag is named first
        main(["train", *flags, "--logs", str(tmp_path), "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("harness-learn: error: ") and says in lines[0], lines[0]
    assert " · hint: " in lines[0] and not out.exists()
