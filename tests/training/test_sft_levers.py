"""What an SFT step of ours spends its work on: the loss is the completion's tokens only (the
prompt masked out of the labels), and the output layer runs on those positions only; the
token counts of a demonstration set are measured with the student's own chat template."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness_learning.training.config import SFTTrainConfig
from harness_learning.training.demonstrations import PROMPT_AIM, token_counts
from harness_learning.training.sft import sft_trainer

ROWS = [{"prompt": [{"role": "user", "content": "## Your job\nRewrite the function `solve`."}],
         "completion": [{"role": "assistant", "content": "```python\ndef solve(state):\n"
                                                         "    return {'answer': '4'}\n```"}]}]


def test_the_loss_falls_on_the_completion_and_only_it_gets_logits(tokenizer_dir, tmp_path):
    from datasets import Dataset
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    config = SFTTrainConfig(model="tiny", out=str(tmp_path), max_steps=1, batch_size=1,
                            max_length=512)
    trainer = sft_trainer(Dataset.from_list(ROWS), config, tokenizer)
    batch = trainer.data_collator([trainer.train_dataset[0]])
    n_prompt = token_counts(ROWS, tokenizer)["per_row"][0][0]
    labels = batch["labels"][0]
    assert (labels[:n_prompt] == -100).all() and (labels[n_prompt:] != -100).all()

    model = trainer.model
    model.eval()
    with torch.no_grad():
        loss = trainer.compute_loss(model, dict(batch))
        logits = model(input_ids=batch["input_ids"]).logits[0]
        fused = model(**{**batch, "fused_lm_head": True})
    by_hand = F.cross_entropy(logits[n_prompt - 1:-1], batch["input_ids"][0, n_prompt:])
    everywhere = F.cross_entropy(logits[:-1], batch["input_ids"][0, 1:])
    assert torch.allclose(loss, by_hand, atol=1e-5) and not torch.allclose(loss, everywhere)
    assert getattr(fused, "logits", None) is None  # no (sequence x vocabulary) tensor


def test_token_counts_measure_prompt_and_completion(tokenizer_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    long = [{**ROWS[0], "prompt": [{"role": "user", "content": "word " * (PROMPT_AIM + 50)}]}]
    short, over = token_counts(ROWS, tokenizer), token_counts(ROWS + long, tokenizer)
    assert short["rows"] == 1 and 10 < short["prompt"]["max"] < 60
    assert 15 < short["completion"]["max"] < 40 and short["prompts_over_aim"] == 0
    assert over["prompts_over_aim"] == 1 and over["prompt"]["max"] > PROMPT_AIM


def test_bf16_on_cpu_holds_the_model_in_bfloat16_with_checkpointed_activations(tokenizer_dir,
                                                                               tmp_path):
    from datasets import Dataset
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    config = SFTTrainConfig(model="tiny", out=str(tmp_path), max_steps=1, batch_size=1,
                            max_length=512, bf16_cpu=True)
    trainer = sft_trainer(Dataset.from_list(ROWS), config, tokenizer)
    frozen = [p.dtype for n, p in trainer.model.named_parameters() if "lora_" not in n]
    trained = [p.dtype for p in trainer.model.parameters() if p.requires_grad]
    assert set(frozen) == {torch.bfloat16} and trained and set(trained) == {torch.float32}
    assert trainer.args.activation_checkpointing
    trainer.train()
    assert torch.isfinite(torch.tensor(trainer.state.log_history[-1]["train_loss"]))
