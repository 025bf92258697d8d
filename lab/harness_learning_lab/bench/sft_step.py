"""`harness-learn bench sft-step`: what one LoRA SFT step of the Proposer costs on this machine,
by sequence length and by how the loss is computed.

Settings, each one optimizer step on one sequence (batch 1) of a real prompt and completion:
- `full`: logits for every position (a 152k-token vocabulary makes them the largest tensor of
  the step), the loss masked to the completion: a plain trainer's step;
- `completion`: the same loss, but the output layer runs on the completion's positions only:
  what `training.sft.sft_trainer` does (TRL's fused LM head on the labelled positions);
- `prompt_cached`: the prompt runs once without gradient and its key/value cache feeds the
  completion, which alone carries gradient (the loss then ignores how LoRA changes the prompt's
  keys and values: an approximation, measured for what it saves); the completion runs without
  gradient checkpointing, which would drop the cache.
All three compute the same loss (the optimizer's learning rate is 0, so the weights stay):
the bench reports it, so a setting that computed another would show.
Peak RSS is the process's so far (rows run cheapest first), as the kernel counts it.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Any

SETTINGS = ("prompt_cached", "completion", "full")


def sequence(tokenizer: Any, length: int, completion: int) -> tuple[Any, int]:
    """(input ids [1, length], prompt length): real text (the reasoning seed harness's source,
    repeated as needed) split into a prompt and a completion of `completion` tokens."""
    import torch

    from harness_learning.harnesses.seeds import seed_source

    ids = tokenizer(seed_source("reasoning_direct"))["input_ids"]
    ids = (ids * (length // len(ids) + 1))[:length]
    completion = min(completion, length // 2)
    return torch.tensor([ids]), length - completion


def _loss_full(model: Any, ids: Any, n_prompt: int) -> Any:
    labels = ids.clone()
    labels[:, :n_prompt] = -100
    return model(input_ids=ids, labels=labels).loss


def _loss_completion(model: Any, ids: Any, n_prompt: int) -> Any:
    import torch.nn.functional as F

    base = model.get_base_model()
    hidden = base.model(input_ids=ids).last_hidden_state[:, n_prompt - 1:-1]
    logits = base.lm_head(hidden).float()
    return F.cross_entropy(logits.flatten(0, 1), ids[:, n_prompt:].flatten())


def _loss_prompt_cached(model: Any, ids: Any, n_prompt: int) -> Any:
    import torch
    import torch.nn.functional as F

    base = model.get_base_model()
    checkpointing = base.is_activation_checkpointing
    if checkpointing:  # checkpointed layers drop the cache: the short completion goes without
        base.activation_checkpointing_disable()
    try:
        with torch.no_grad():
            prompt = base.model(input_ids=ids[:, :n_prompt], use_cache=True)
        hidden = base.model(input_ids=ids[:, n_prompt:], cache=prompt.cache,
                            use_cache=True).last_hidden_state[:, :-1]
    finally:
        if checkpointing:
            base.activation_checkpointing_enable({"use_reentrant": False})
    hidden = torch.cat([prompt.last_hidden_state[:, -1:], hidden], dim=1)  # predicts token 1
    logits = base.lm_head(hidden).float()
    return F.cross_entropy(logits.flatten(0, 1), ids[:, n_prompt:].flatten())


LOSSES: dict[str, Callable[[Any, Any, int], Any]] = {
    "full": _loss_full, "completion": _loss_completion, "prompt_cached": _loss_prompt_cached}


def peak_rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)


def student(model_name: str, dtype: str, lora_r: int, checkpointing: bool) -> tuple[Any, Any]:
    """(LoRA model, tokenizer) as `train sft` builds them, in `dtype` (bf16 or fp32)."""
    import torch

    from harness_learning.training.loading import (
        gguf_path,
        load_model,
        load_tokenizer,
        rebuild_from_gguf,
        with_lora,
    )

    tokenizer = load_tokenizer(model_name)
    torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
    gguf = gguf_path(model_name) if model_name != "tiny" else None
    model = (rebuild_from_gguf(gguf, torch_dtype) if gguf is not None  # never whole in fp32
             else load_model(model_name, tokenizer).to(torch_dtype))
    if checkpointing:
        model.activation_checkpointing_enable({"use_reentrant": False})
        model.enable_input_require_grads()
    model = with_lora(model, r=lora_r, alpha=2 * lora_r, dropout=0.0)
    model.train()
    return model, tokenizer


def run(model_name: str, lengths: list[int], settings: tuple[str, ...], completion: int = 300,
        steps: int = 1, dtype: str = "bf16", lora_r: int = 16, checkpointing: bool = True,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Seconds per optimizer step (the mean of `steps`) per length and setting."""
    import torch

    start = time.perf_counter()
    model, tokenizer = student(model_name, dtype, lora_r, checkpointing)
    load_s = round(time.perf_counter() - start, 1)
    log(f"sft step: {model_name} loaded in {load_s} s ({dtype}, LoRA r={lora_r}, "
        f"{torch.get_num_threads()} thread(s), peak RSS {peak_rss_gb()} GB)")
    # learning rate 0: AdamW does all its work, the weights stay, so every setting's first loss
    # is of the same model and full and completion must agree
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.0)
    rows = []
    for length in sorted(lengths):
        ids, n_prompt = sequence(tokenizer, length, completion)
        for setting in sorted(settings, key=SETTINGS.index):
            seconds, loss = [], None
            for _ in range(steps):
                t0 = time.perf_counter()
                value = LOSSES[setting](model, ids, n_prompt)
                value.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                seconds.append(time.perf_counter() - t0)
                loss = loss if loss is not None else float(value.detach())
            row = {"tokens": length, "prompt": n_prompt, "setting": setting,
                   "s_per_step": round(sum(seconds) / len(seconds), 2), "first_loss": loss,
                   "peak_rss_gb": peak_rss_gb()}
            rows.append(row)
            log(f"  {length} tokens, {setting}: {row['s_per_step']} s/step")
    return {"model": model_name, "dtype": dtype, "lora_r": lora_r, "load_s": load_s,
            "threads": torch.get_num_threads(), "checkpointing": checkpointing, "rows": rows}


def table(figures: dict[str, Any]) -> str:
    lines = [f"{figures['model']}, {figures['dtype']}, LoRA r={figures['lora_r']}, "
             f"{figures['threads']} thread(s), gradient checkpointing "
             f"{'on' if figures['checkpointing'] else 'off'}",
             "| tokens | prompt | setting | s/step | first loss | peak RSS GB |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['tokens']} | {r['prompt']} | {r['setting']} | {r['s_per_step']:.2f} | "
              f"{r['first_loss']:.4f} | {r['peak_rss_gb']:.2f} |" for r in figures["rows"]]
    return "\n".join(lines)
