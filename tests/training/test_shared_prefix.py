"""The shared-prefix GRPO forward against TRL's own: the same log-probs, entropies and gradients,
and the same generations, with each group's prompt run once (a small random Llama, with and
without LoRA, two groups of different prompt lengths, padded completions)."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from trl.trainer.utils import add_fused_lm_head

from harness_learning.training.shared_prefix import (
    prompt_groups,
    shared_prefix_generate,
    shared_prefix_logps,
)

PAD, TEMPERATURE, KEEP = 0, 0.7, 5


def tiny_model(lora: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=61, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, pad_token_id=PAD)
    model = LlamaForCausalLM(config)
    add_fused_lm_head(model, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                 init_lora_weights=False))
    return model.float()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Rows 0, 2, 3 share a prompt of 6 tokens left-padded to 8; rows 1, 4 one of 8. Completions
    of 5 tokens, some right-padded (what TRL's trainer builds)."""
    g = torch.Generator().manual_seed(1)
    short = torch.cat([torch.full((2,), PAD), torch.randint(1, 61, (6,), generator=g)])
    long = torch.randint(1, 61, (8,), generator=g)
    prompts = torch.stack([short, long, short, short, long])
    completions = torch.randint(1, 61, (5, KEEP), generator=g)
    completion_mask = torch.ones_like(completions)
    completion_mask[0, 3:] = 0
    completion_mask[4, 1:] = 0
    completions = completions.masked_fill(completion_mask == 0, PAD)
    ids = torch.cat([prompts, completions], dim=1)
    return ids, torch.cat([(prompts != PAD).long(), completion_mask], dim=1)


def trl_logps(model, ids, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """What GRPOTrainer._get_per_token_logps_and_entropies computes (TRL 1.16)."""
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-KEEP] = -100
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -KEEP:], out.entropy[:, -KEEP:]


def test_rows_are_grouped_by_their_whole_prompt_padding_included():
    ids, mask = batch()
    assert prompt_groups(ids[:, :8], mask[:, :8]) == [[0, 2, 3], [1, 4]]
    shifted = mask.clone()
    shifted[3, 0] = 1  # same ids, other padding: another prompt
    assert prompt_groups(ids[:, :8], shifted[:, :8]) == [[0, 2], [1, 4], [3]]


@pytest.mark.parametrize("lora", [False, True])
def test_log_probs_entropies_and_gradients_match_trls_forward(lora):
    model = tiny_model(lora)
    ids, mask = batch()
    scored = mask[:, -KEEP:].bool()

    ref_logps, ref_entropy = trl_logps(model, ids, mask)
    ref_logps[scored].sum().backward()
    trainable = [p for p in model.parameters() if p.requires_grad]
    ref_grads = [p.grad.clone() for p in trainable]
    model.zero_grad()

    logps, entropy = shared_prefix_logps(model, ids, mask, KEEP, TEMPERATURE,
                                         compute_entropy=True)
    logps[scored].sum().backward()
    assert torch.allclose(logps[scored], ref_logps[scored], atol=1e-5)
    assert torch.allclose(entropy[scored], ref_entropy[scored], atol=1e-5)
    for grad, ref in zip((p.grad for p in trainable), ref_grads, strict=True):
        assert torch.allclose(grad, ref, atol=1e-5, rtol=1e-4)


def test_a_batch_with_no_prompt_before_the_scored_tokens_is_refused():
    model = tiny_model(False)
    ids, mask = batch()
    with pytest.raises(ValueError, match="no prompt before the last"):
        shared_prefix_logps(model, ids, mask, ids.size(1))


@pytest.mark.parametrize("lora", [False, True])
def test_generation_of_a_repeated_prompt_is_unchanged(lora):
    model = tiny_model(lora)
    prompt = torch.randint(1, 61, (1, 9), generator=torch.Generator().manual_seed(2))
    ids, mask = prompt.repeat(3, 1), torch.ones(3, 9, dtype=torch.long)
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return model.forward(*args, **kwargs)

    settings = {"max_new_tokens": 6, "do_sample": False, "pad_token_id": PAD}
    with torch.no_grad():
        plain = model.generate(input_ids=ids, attention_mask=mask, **settings)
        shared = shared_prefix_generate(counted, model.generate)(input_ids=ids,
                                                                 attention_mask=mask, **settings)
    assert torch.equal(shared, plain)
    assert calls == [1]  # the prompt was prefilled once, for all three rows
