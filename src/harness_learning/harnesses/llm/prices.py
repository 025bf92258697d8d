"""What a model call costs, in USD: the one place a price is decided.

A model spec may name its own price, `?price_in=0.15&price_out=0.6` in USD per million
prompt and completion tokens: the way to price a model behind an `openai/NAME@URL` endpoint of
one's own, which litellm's price list cannot know. A stated price is honoured on every model,
local ones included (`local?price_in=100&price_out=100` makes a demo's `--max-cost-usd` fire):
a price typed and then ignored would be a silent lie. Without one, local models (`local`,
`local:...`) cost nothing, and litellm's list prices any other model by its name; a model it
does not list has no known price (None), and a run with a $ budget refuses to start with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness_learning.harnesses.llm.config import ModelConfig

PER = 1_000_000
"""Prices are quoted per million tokens."""


@dataclass(frozen=True)
class Price:
    """USD per million prompt (`input_per_m`) and completion (`output_per_m`) tokens."""

    input_per_m: float
    output_per_m: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_m + completion_tokens * self.output_per_m) / PER


FREE = Price(0.0, 0.0)


def stated_price(config: ModelConfig) -> Price | None:
    """The price the config itself decides (`price_in`/`price_out`, on any model; else free
    for a local one), else None: known without importing litellm."""
    if config.price_in is not None or config.price_out is not None:
        return Price(config.price_in or 0.0, config.price_out or 0.0)
    return FREE if config.is_local else None


def price_of(config: ModelConfig | str) -> Price | None:
    """The price of one call's tokens to `config`'s model, or None when nothing prices it."""
    config = ModelConfig.coerce(config)
    stated = stated_price(config)
    if stated is not None or config.endpoints:  # a server of one's own: no list knows it
        return stated
    return listed_price(config.model)


def listed_price(model: str) -> Price | None:
    """litellm's list price of `model` (its bundled cost map: no network), or None."""
    from harness_learning.harnesses.llm.litellm_loop import import_litellm

    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises a bare Exception for a model it does not list
        return None
    per_in, per_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not isinstance(per_in, int | float) or not isinstance(per_out, int | float):
        return None
    return Price(float(per_in) * PER, float(per_out) * PER)
