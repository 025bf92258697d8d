"""SFT warm start with TRL's SFTTrainer on logged successful edits."""

import json
import math

import torch
from safetensors.torch import load_file

from harness_learning.training.config import SFTTrainConfig
from harness_learning.training.sft import train_sft
from harness_learning.training.teacher import sft_dataset


def test_sft_set_holds_only_edits_that_beat_their_parent(logged_run):
    ds = sft_dataset([logged_run])
    assert len(ds) > 0
    assert all(row["gain"] > 0 for row in ds)
    assert len({(r["group_id"], r["completion"][0]["content"]) for r in ds}) == len(ds)


def test_two_sft_steps_move_weights(logged_run, tiny_dir, tmp_path):
    cfg = SFTTrainConfig(model=str(tiny_dir), out=str(tmp_path / "sft"), max_steps=2,
                         batch_size=2, lora=False, learning_rate=1e-2, max_length=4096)
    result = train_sft([logged_run], cfg, progress=False)
    rows = [json.loads(line) for line in result.metrics.read_text().splitlines()]
    losses = [r["loss"] for r in rows if "loss" in r]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    before = load_file(str(tiny_dir / "model.safetensors"))
    after = load_file(str(result.checkpoint / "model.safetensors"))
    assert any(not torch.equal(before[k], after[k]) for k in before)
