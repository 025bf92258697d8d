"""Run a GRPO group's shared prompt once, not once per completion.

A group is `num_generations` completions of one Proposer prompt, and that prompt (task, harness,
report: ~1.6k tokens) is ~20x longer than a completion. TRL's GRPOTrainer pushes every
prompt+completion row through the model whole, in generation and again in the loss, so on CPU
nearly all of a step's compute goes to recomputing the same prompt 8 times (measured on the
reduced experiment's SFT student, 2 cores, by `harness-learn bench grpo-step`: 52 s of
generation, 66 s of loss forward and 76 s of backward in a 200 s step).

Here each distinct prompt runs once, its key/value cache is repeated for the rows that share it,
and only the completions run per row. The gradient still flows through the prompt's cache (it is
one graph), so the loss and its gradient are TRL's, up to float rounding
(`tests/training/test_shared_prefix.py` checks both against TRL's own forward).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers.modeling_outputs import CausalLMOutputWithPast


def prompt_groups(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> list[list[int]]:
    """Row indices grouped by identical prompt (ids and padding alike), in first-seen order."""
    groups: dict[bytes, list[int]] = {}
    rows = torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], dim=1).cpu()
    for i, row in enumerate(rows):
        groups.setdefault(row.numpy().tobytes(), []).append(i)
    return list(groups.values())


def _prefill(model: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
             rows: int, **kwargs: object) -> CausalLMOutputWithPast:
    """One prompt (a 1-row batch) through `model`, its cache repeated for `rows` rows."""
    out = model(input_ids=prompt_ids, attention_mask=prompt_mask, use_cache=True, **kwargs)
    out.cache.batch_repeat_interleave(rows)
    return out


def _tempered(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.log_softmax(logits.float() / temperature, dim=-1)


def shared_prefix_logps(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        logits_to_keep: int, temperature: float = 1.0,
                        compute_entropy: bool = False
                        ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (and entropies) of each row's last `logits_to_keep` tokens under
    `temperature`, as TRL's `_get_per_token_logps_and_entropies` gives them, each distinct
    prompt (the tokens before those) run once."""
    width = input_ids.size(1) - logits_to_keep
    if width < 1:
        raise ValueError(f"no prompt before the last {logits_to_keep} tokens")
    logp_rows, entropy_rows = [], []
    order = prompt_groups(input_ids[:, :width], attention_mask[:, :width])
    for rows in order:
        first = rows[0]
        prefix = _prefill(model, input_ids[first:first + 1, :width],
                          attention_mask[first:first + 1, :width], len(rows), logits_to_keep=1)
        rest = model(input_ids=input_ids[rows, width:], attention_mask=attention_mask[rows],
                     cache=prefix.cache, use_cache=True)
        # The prompt's last position predicts the first completion token; each completion
        # position predicts the next one (its own last logit predicts past the end: unused).
        logits = torch.cat([prefix.logits[:, -1:].expand(len(rows), -1, -1),
                            rest.logits[:, :-1]], dim=1)
        log_probs = _tempered(logits, temperature)
        targets = input_ids[rows, width:].unsqueeze(-1)
        logp_rows.append(log_probs.gather(-1, targets).squeeze(-1))
        if compute_entropy:
            entropy_rows.append(-(log_probs.exp() * log_probs).sum(-1))
    # Rows were computed group by group: put them back in the batch's order.
    back = torch.tensor([i for rows in order for i in rows], device=input_ids.device).argsort()
    entropies = torch.cat(entropy_rows)[back] if compute_entropy else None
    return torch.cat(logp_rows)[back], entropies


def shared_prefix_generate(model: torch.nn.Module, generate: Callable[..., torch.Tensor]
                           ) -> Callable[..., torch.Tensor]:
    """`generate`, prefilling a batch of one repeated prompt once (all but its last token; the
    cache is repeated per row) instead of once per row. Other batches pass through as they are."""

    def run(input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
            **kwargs: object) -> torch.Tensor:
        if input_ids is None or input_ids.size(0) < 2 or input_ids.size(1) < 2 or (
                kwargs.get("cache") is not None or kwargs.get("past_key_values") is not None):
            return generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        if len(prompt_groups(input_ids, mask)) == 1:
            with torch.no_grad():
                prefix = _prefill(model, input_ids[:1, :-1], mask[:1, :-1], input_ids.size(0),
                                  logits_to_keep=1)
            kwargs["cache"] = prefix.cache
        return generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

    return run
