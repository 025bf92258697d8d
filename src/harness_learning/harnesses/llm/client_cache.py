"""`get_client`: one `ModelClient` per distinct config in a process, so calls with the same
config share one cache, one concurrency bound and one set of usage counters."""

from __future__ import annotations

import threading
from typing import Any

from harness_learning.harnesses.llm.client import ModelClient
from harness_learning.harnesses.llm.config import ModelConfig

_lock = threading.Lock()
_clients: dict[str, ModelClient] = {}


def get_client(name_or_config: ModelConfig | str | dict[str, Any]) -> ModelClient:
    """The shared client for a config, a spec string (`ModelConfig.parse`) or a dict."""
    config = ModelConfig.coerce(name_or_config)
    key = config.key()
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = ModelClient(config)
        return client


def clear_clients() -> None:
    """Forget every shared client (tests; a fresh process state)."""
    with _lock:
        _clients.clear()
