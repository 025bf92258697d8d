"""The off-policy side of offline GRPO: whose log-probs the importance ratio is taken against.

A log written by the Proposer endpoint holds the sampled tokens with their log-probs (llama.cpp
and vLLM return them). They are the right `logp_old` only if our tokenisation of the completion
is the one that was sampled, so each row is checked token by token; a row that fails the check,
or has none, is recomputed from the base model, and the reason is counted so the data summary can
say so. The ratio's statistics show how far the trained model is from the policy that wrote the
log (1.0 everywhere means the same policy).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

NO_LOGPROBS = "no log-probs in the log"
RECOMPUTE_ASKED = "--recompute-logprobs"


def _count_mismatch(logged: int, ours: int) -> str:
    return f"token count differs (endpoint {logged}, ours {ours})"


TOKENS_DIFFER = "tokenisation differs from the endpoint's"


def sampled_ids(tokenizer: PreTrainedTokenizerBase, pieces: list[str], text: str) -> list[int] | None:
    """The endpoint's sampled tokens as our token ids, when its pieces spell `text` and each
    piece is exactly one token of ours. A model may sample a non-canonical split (' {}' then
    ',' where re-tokenising the text gives ' {},'); training on the sampled split keeps the
    logged log-probs usable. None when the pieces cannot be mapped (then the text is
    re-tokenised)."""
    if not pieces or "".join(pieces) != text:
        return None
    ids = []
    for piece in pieces:
        got = tokenizer(piece, add_special_tokens=False)["input_ids"]
        if len(got) != 1:
            return None
        ids.append(got[0])
    return ids


def align_logged(logged: list[float], tokens: list[str], text_ids: list[int], eos: bool,
                 kept: int, tokenizer: PreTrainedTokenizerBase | None = None
                 ) -> tuple[list[float] | None, str | None]:
    """Logged log-probs aligned to our completion tokens, or None and why not.

    `text_ids` is our tokenisation of the whole completion text; `eos` says an end-of-turn
    token follows it; `kept` is how many completion tokens survived the length cut. An
    endpoint that logs no end-of-turn token leaves that position NaN: the trainer uses the
    current policy's value there (ratio 1)."""
    if not logged:
        return None, NO_LOGPROBS
    n = len(text_ids)
    if len(logged) == n + 1 and eos:
        aligned = list(logged)
    elif len(logged) == n:
        aligned = list(logged) + ([math.nan] if eos else [])
    else:
        return None, _count_mismatch(len(logged), n)
    if tokens and tokenizer is not None:
        ours = [tokenizer.decode([t]) for t in text_ids]
        if ours != tokens[:n]:
            return None, TOKENS_DIFFER
    return aligned[:kept], None


@dataclass
class OldLogprobReport:
    """Where each completion's `logp_old` came from."""

    logged: int = 0
    recomputed: Counter = field(default_factory=Counter)

    def note(self) -> str:
        total = self.logged + sum(self.recomputed.values())
        text = f"logged log-probs used for {self.logged}/{total} completions"
        if self.recomputed:
            why = ", ".join(f"{n} {reason}" for reason, n in self.recomputed.most_common())
            text += f"; recomputed from the base model for {sum(self.recomputed.values())} ({why})"
        return text


@dataclass
class RatioStats:
    """Per-token importance ratio r = exp(logp - logp_old) over some completion tokens."""

    tokens: int
    mean: float
    std: float
    min: float
    p05: float
    median: float
    p95: float
    max: float
    outside_clip: float
    """Fraction of tokens with r outside [1 - epsilon, 1 + epsilon_high]."""

    def line(self) -> str:
        return (f"{self.tokens} tokens: mean {self.mean:.4f} std {self.std:.4f} min "
                f"{self.min:.4f} p05 {self.p05:.4f} median {self.median:.4f} p95 "
                f"{self.p95:.4f} max {self.max:.4f}, outside the clip range "
                f"{self.outside_clip:.1%}")


def ratio_stats(ratios: list[torch.Tensor], epsilon: float, epsilon_high: float
                ) -> RatioStats | None:
    """Summary of the ratios of some completions (None when there are none)."""
    if not ratios:
        return None
    r = torch.cat([x.detach().float().flatten() for x in ratios])
    if r.numel() == 0:
        return None
    q = torch.quantile(r, torch.tensor([0.05, 0.5, 0.95]))
    outside = ((r < 1 - epsilon) | (r > 1 + epsilon_high)).float().mean()
    return RatioStats(int(r.numel()), float(r.mean()), float(r.std(unbiased=False)),
                      float(r.min()), float(q[0]), float(q[1]), float(q[2]), float(r.max()),
                      float(outside))
