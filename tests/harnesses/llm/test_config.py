from __future__ import annotations

import pytest

from harness_learning.harnesses.llm import LOCAL_MODEL, ModelConfig


def test_parse_model_only() -> None:
    config = ModelConfig.parse("openai/gpt-4o-mini")
    assert config.model == "openai/gpt-4o-mini"
    assert config.api_base is None
    assert config.endpoints == []


def test_parse_replicas_and_options() -> None:
    config = ModelConfig.parse(
        "openai/qwen@http://h1:8000/v1,http://h2:8000/v1?temperature=0&max_tokens=64"
        "&max_concurrency=3&stop=END"
    )
    assert config.model == "openai/qwen"
    assert config.endpoints == ["http://h1:8000/v1", "http://h2:8000/v1"]
    assert config.params == {"temperature": 0, "max_tokens": 64, "stop": "END"}
    assert config.max_concurrency == 3


def test_parse_keeps_at_sign_inside_model_names() -> None:
    config = ModelConfig.parse("vertex_ai/claude@20240620")
    assert config.model == "vertex_ai/claude@20240620"
    assert config.api_base is None


def test_parse_single_url_is_a_string_and_overrides_win() -> None:
    config = ModelConfig.parse("openai/x@http://127.0.0.1:9/v1", timeout_s=3.0)
    assert config.api_base == "http://127.0.0.1:9/v1"
    assert config.timeout_s == 3.0


@pytest.mark.parametrize("spec", ["", "openai/x?=3", "openai/x@http://h/v1?max_concurrency=0"])
def test_parse_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError):
        ModelConfig.parse(spec)


def test_local_alias_gets_greedy_short_defaults_that_calls_may_override() -> None:
    config = ModelConfig.parse("local?max_tokens=8")
    assert config.model == LOCAL_MODEL
    assert config.params == {"max_tokens": 8}, "params hold what the user wrote, no more"
    assert config.call_params({}) == {"temperature": 0.0, "max_tokens": 8}
    assert config.call_params({"temperature": 0.7}) == {"temperature": 0.7, "max_tokens": 8}
    assert ModelConfig.parse("openai/x").call_params({}) == {}, "a remote model has no defaults"


def test_equal_configs_have_equal_keys() -> None:
    a = ModelConfig.parse("openai/x@http://h/v1?temperature=0")
    b = ModelConfig(model="openai/x", api_base="http://h/v1", params={"temperature": 0})
    assert a.key() == b.key()
    assert a.key() != a.with_(max_retries=9).key()


def test_coerce_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        ModelConfig.coerce(42)  # type: ignore[arg-type]


def test_concurrency_defaults_to_one_for_the_single_slot_local_server() -> None:
    assert ModelConfig("local").max_concurrency == 1
    assert ModelConfig("local", max_concurrency=3).max_concurrency == 3
    assert ModelConfig("openai/x").max_concurrency == 8


def test_a_local_model_may_have_replicas_a_remote_one_has_urls() -> None:
    assert ModelConfig.parse("local:qwen2.5-coder-1.5b?replicas=2").replicas == 2
    assert ModelConfig.parse("local").replicas == 1
    for spec, says in [("local?replicas=0", "replicas must be an integer >= 1"),
                       ("local?replicas=1.5", "replicas must be an integer >= 1"),
                       ("openai/x@http://h/v1?replicas=2", "its URLs")]:
        with pytest.raises(ValueError, match=says):
            ModelConfig.parse(spec)
