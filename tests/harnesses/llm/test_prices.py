"""What a model call costs (harnesses/llm/prices.py): a spec's own `price_in`/`price_out` on
any model (a local one included), else nothing for a local model and litellm's list for the
rest; and the client records it on each completion."""

from __future__ import annotations

from typing import Any

import pytest

from harness_learning.harnesses.llm import ModelClient, ModelConfig, SimServer
from harness_learning.harnesses.llm.prices import FREE, Price, price_of


def test_a_spec_states_its_price_per_million_tokens() -> None:
    config = ModelConfig.parse("openai/qwen@http://127.0.0.1:8000/v1?price_in=0.5&price_out=1.5"
                               "&temperature=0")
    assert (config.price_in, config.price_out) == (0.5, 1.5)
    assert config.params == {"temperature": 0}, "prices are no completion parameters"
    assert price_of(config) == Price(0.5, 1.5)
    assert Price(0.5, 1.5).cost(2_000_000, 1_000_000) == pytest.approx(2.5)


@pytest.mark.parametrize("bad", ["price_in=-1", "price_out=cheap", "price_in=true"])
def test_a_bad_price_is_refused_with_its_unit(bad: str) -> None:
    with pytest.raises(ValueError, match="USD per million tokens"):
        ModelConfig.parse(f"openai/qwen@http://127.0.0.1:8000/v1?{bad}")


def test_local_models_are_free_and_unlisted_endpoints_unpriced() -> None:
    assert price_of("local") == FREE and price_of("local:qwen2.5-coder-1.5b") == FREE
    assert price_of("openai/my-own-model@http://127.0.0.1:8000/v1") is None
    listed = price_of("openai/gpt-4o-mini")  # litellm's bundled list (no network)
    assert listed is not None and listed.input_per_m > 0 and listed.output_per_m > 0


@pytest.mark.parametrize("spec", ["local?price_in=100&price_out=100",
                                  "local:qwen2.5-coder-1.5b?price_in=100&price_out=100",
                                  "local:smollm2-135m?price_out=100&price_in=100"])
def test_a_price_stated_on_a_local_model_is_honoured(spec: str) -> None:
    assert price_of(spec) == Price(100.0, 100.0), "a typed price must never be ignored"


@pytest.mark.parametrize("transport", ["litellm", "direct"])
def test_each_completion_carries_its_price(sim: SimServer, sim_config: Any,
                                           transport: str) -> None:
    client = ModelClient(sim_config(sim, price_in=2.0, price_out=4.0, transport=transport))
    result = client.complete("What is 3 + 4?")
    assert (result.prompt_tokens, result.completion_tokens) == (5, 2)
    assert result.cost == pytest.approx((5 * 2.0 + 2 * 4.0) / 1e6)
    assert client.stats.cost == pytest.approx(result.cost)


def test_an_unpriced_endpoint_leaves_the_cost_unknown(sim: SimServer, sim_config: Any) -> None:
    assert ModelClient(sim_config(sim)).complete("What is 1 + 1?").cost is None


def test_the_real_local_model_costs_nothing(local_model_url: str) -> None:
    result = ModelClient("local").complete("What is 2 + 2? Answer with a number.")
    assert result.completion_tokens > 0 and result.cost == 0.0


def test_the_real_local_model_is_charged_its_stated_price(local_model_url: str) -> None:
    """`--solver 'local?price_in=100&price_out=100'` costs money, so `--max-cost-usd` can fire
    on the demo's own models."""
    client = ModelClient("local?price_in=100&price_out=100")
    result = client.complete("What is 2 + 3? Answer with a number.")
    want = (result.prompt_tokens * 100 + result.completion_tokens * 100) / 1e6
    assert result.completion_tokens > 0 and result.cost == pytest.approx(want) and want > 0
    assert client.stats.cost == pytest.approx(want)
