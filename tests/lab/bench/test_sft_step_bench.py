"""`bench sft-step`: every loss setting runs one real LoRA step and computes the same loss."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_every_setting_steps_and_computes_the_same_completion_loss():
    from harness_learning_lab.bench import sft_step

    figures = sft_step.run("tiny", [48, 96], sft_step.SETTINGS, completion=16, dtype="fp32",
                           lora_r=4, log=lambda msg: None)
    rows = figures["rows"]
    assert [(r["tokens"], r["setting"]) for r in rows] == [
        (n, s) for n in (48, 96) for s in sft_step.SETTINGS]
    assert all(r["s_per_step"] > 0 and r["prompt"] == r["tokens"] - 16 for r in rows)
    for n in (48, 96):
        losses = [r["first_loss"] for r in rows if r["tokens"] == n]
        assert max(losses) - min(losses) < 1e-4, losses  # lr 0: the same model each time
    table = sft_step.table(figures)
    assert "| 96 | 80 | prompt_cached |" in table and table.count("\n") == len(rows) + 2
