"""The offline GRPO loss: token-level clipped policy gradient against logged log-probs.

TRL's GRPOTrainer computes its ratio against log-probs it generated itself; offline we have
completions written by an older policy (the one whose log we read), so the importance ratio is
taken against those logged (or recomputed) log-probs. Losses are averaged over all completion
tokens of the batch (DAPO's token-level normalisation), so long completions count per token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LossStats:
    loss: float
    kl: float
    clip_fraction: float
    ratio_mean: float


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """Log-prob of each next token: logits (B, T, V), ids (B, T) -> (B, T-1)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    return logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    ref_logprobs: torch.Tensor | None = None,
    beta: float = 0.0,
) -> tuple[torch.Tensor, LossStats]:
    """Clipped surrogate per token, masked mean over all tokens of the batch.

    logprobs, old_logprobs, mask: (B, T); advantages: (B,) one per completion. Per token:
    max(-A * r, -A * clip(r, 1 - eps, 1 + eps_high)) with r = exp(logp - old_logp), plus
    beta * KL(pi || ref) by the k3 estimator exp(ref - logp) - (ref - logp) - 1.
    """
    if not (logprobs.shape == old_logprobs.shape == mask.shape):
        raise ValueError(
            f"shape mismatch: logprobs {tuple(logprobs.shape)}, old {tuple(old_logprobs.shape)}, "
            f"mask {tuple(mask.shape)}"
        )
    high = epsilon if epsilon_high is None else epsilon_high
    mask = mask.to(logprobs.dtype)
    adv = advantages.to(logprobs.dtype).unsqueeze(-1)
    ratio = torch.exp(logprobs - old_logprobs.detach())
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + high)
    per_token = torch.maximum(-adv * ratio, -adv * clipped)
    kl = torch.zeros_like(logprobs)
    if beta and ref_logprobs is not None:
        delta = ref_logprobs.detach() - logprobs
        kl = torch.exp(delta) - delta - 1.0
        per_token = per_token + beta * kl
    n_tokens = mask.sum().clamp(min=1.0)
    loss = (per_token * mask).sum() / n_tokens
    with torch.no_grad():
        was_clipped = ((ratio < 1.0 - epsilon) & (adv < 0)) | ((ratio > 1.0 + high) & (adv > 0))
        stats = LossStats(
            loss=float(loss),
            kl=float((kl * mask).sum() / n_tokens),
            clip_fraction=float((was_clipped.to(mask.dtype) * mask).sum() / n_tokens),
            ratio_mean=float((ratio * mask).sum() / n_tokens),
        )
    return loss, stats
