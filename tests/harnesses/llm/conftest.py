"""Fixtures of the model-layer tests: a fresh simulated server and a fast-retrying config."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness_learning.harnesses.llm import ModelConfig, SimServer


@pytest.fixture
def sim() -> Iterator[SimServer]:
    """A simulated OpenAI-compatible server with 10 ms latency, stopped after the test."""
    server = SimServer(latency_s=0.01, slots=64)
    server.start()
    yield server
    server.stop()


def _sim_config(server: SimServer | list[SimServer], **overrides: Any) -> ModelConfig:
    """A config pointing at simulated server(s) with short timeouts and backoff."""
    servers = server if isinstance(server, list) else [server]
    urls = [s.url for s in servers]
    fields: dict[str, Any] = {
        "model": "openai/sim",
        "api_base": urls[0] if len(urls) == 1 else urls,
        "timeout_s": 5.0,
        "max_retries": 3,
        "backoff_s": 0.01,
        "max_backoff_s": 2.0,
        "params": {"temperature": 0, "max_tokens": 32},
    }
    fields.update(overrides)
    return ModelConfig(**fields)


@pytest.fixture
def sim_config() -> Any:
    """Factory: `sim_config(server_or_servers, **field_overrides) -> ModelConfig`."""
    return _sim_config
