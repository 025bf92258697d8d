"""Offline GRPO: real optimizer steps on a tiny Llama from logged groups."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from harness_learning.training.config import GRPOOfflineConfig
from harness_learning.training.grpo_offline import encode, train_grpo_offline


def _weights(path):
    return load_file(str(path / "model.safetensors"))


def _moved(before, after):
    return [k for k in before if not torch.equal(before[k], after[k])]


@pytest.mark.parametrize("lora", [False, True])
def test_two_steps_move_weights_with_finite_loss(logged_run, tiny_dir, tmp_path, lora):
    cfg = GRPOOfflineConfig(model=str(tiny_dir), out=str(tmp_path / "out"), max_steps=2,
                            batch_size=4, lora=lora, lora_r=4, lora_alpha=8,
                            learning_rate=1e-2, max_length=512)
    result = train_grpo_offline([logged_run], cfg, progress=False)
    rows = [json.loads(line) for line in result.metrics.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(math.isfinite(r["loss"]) and r["grad_norm"] > 0 for r in rows)
    assert result.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    moved = _moved(_weights(tiny_dir), _weights(result.checkpoint))
    assert moved, "no weight changed after two optimizer steps"
    assert result.report.groups_kept == 2  # both rounds of the adapter run have a spread
    (note,) = [n for n in result.report.notes if n.startswith("logged log-probs used for 0/")]
    assert "recomputed from the base model" in note and "no log-probs in the log" in note
    assert result.ratio == {}  # nothing logged: no ratio against logged log-probs


def test_logged_logprobs_are_used_when_they_match(logged_run, tiny_dir, tmp_path):
    from transformers import AutoTokenizer

    from harness_learning.training.data import grpo_dataset
    from harness_learning.training.grpo_offline import prepare_logprobs
    from harness_learning.training.loading import load_model

    cfg = GRPOOfflineConfig(model=str(tiny_dir), max_length=512)
    ds, _ = grpo_dataset([logged_run], cfg)
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    items = [encode(tok, row, 512) for row in ds]
    rows = [dict(r) for r in ds]
    assert items[0].eos and items[2].eos
    rows[0]["old_logprobs"] = [-0.5] * items[0].n_completion  # end-of-turn logged too
    rows[1]["old_logprobs"] = [-0.5] * (items[1].n_completion + 3)  # mismatched: recomputed
    text = [tok.decode([t]) for t in items[2].text_ids]
    rows[2]["old_logprobs"], rows[2]["old_tokens"] = [-0.25] * len(text), text  # no end-of-turn
    rows[3]["old_logprobs"] = [-0.5] * len(items[3].text_ids)
    rows[3]["old_tokens"] = ["x"] * len(items[3].text_ids)  # another tokenisation
    model = load_model(str(tiny_dir))
    report = prepare_logprobs(model, items, rows, cfg, "cpu", tok)
    assert report.logged == 2
    assert dict(report.recomputed) == {
        f"token count differs (endpoint {items[1].n_completion + 3}, ours "
        f"{len(items[1].text_ids)})": 1, "tokenisation differs from the endpoint's": 1,
        "no log-probs in the log": len(items) - 4}
    assert torch.equal(items[0].old, torch.full((items[0].n_completion,), -0.5))
    assert torch.equal(items[2].old[:-1], torch.full((len(text),), -0.25))
    assert torch.isnan(items[2].old[-1])  # the trainer takes the current policy's value there
    for e in (items[1], items[3]):
        assert not torch.isnan(e.old).any() and (e.old <= 0).all() and not e.logged
    assert report.note().startswith("logged log-probs used for 2/")


def test_encode_appends_end_of_turn_only_when_the_model_stopped(tiny_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    row = {"prompt": [{"role": "user", "content": "fix it " * 50}], "completion": "done",
           "advantage": 0.5, "reward": 0.2, "finish_reason": "stop"}
    stopped = encode(tok, row, 4096)
    assert stopped.ids[-1] == tok.eos_token_id
    cut = encode(tok, {**row, "finish_reason": "length"}, 4096)
    assert cut.n_completion == stopped.n_completion - 1
    short = encode(tok, row, 16)  # prompt cut on the left, completion kept whole
    assert len(short.ids) == 16 and short.ids[-stopped.n_completion:] == \
        stopped.ids[-stopped.n_completion:]
