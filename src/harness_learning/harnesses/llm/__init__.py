"""The model layer: every Solver and Proposer call goes through `ModelClient` and litellm.

    from harness_learning.harnesses.llm import get_client
    client = get_client("local")                       # embedded SmolLM2-135M on loopback
    client = get_client("local:qwen2.5-coder-1.5b")    # after `harness-learn models fetch`
    client = get_client("openai/qwen@http://127.0.0.1:8000/v1?temperature=0")
    answer = client.complete("What is 2+2?").text       # or: await client.acomplete(...)

Infrastructure failures raise `InfraError`; see `ModelConfig.parse` for the spec grammar and
`SimServer` for a simulated endpoint.
"""

from harness_learning.harnesses.llm.cache import ResponseCache, cache_key
from harness_learning.harnesses.llm.client import ModelClient, is_deterministic
from harness_learning.harnesses.llm.client_cache import clear_clients, get_client
from harness_learning.harnesses.llm.completion import Completion, UsageStats
from harness_learning.harnesses.llm.config import LOCAL_MODEL, ModelConfig
from harness_learning.harnesses.llm.errors import (
    INFRA_KINDS,
    InfraError,
    LocalModelError,
    ModelRequestError,
)
from harness_learning.harnesses.llm.local import (
    LOCAL_URL_ENV,
    ensure_local_server,
    find_gguf,
    stop_local_server,
)

__all__ = [
    "INFRA_KINDS",
    "LOCAL_MODEL",
    "LOCAL_URL_ENV",
    "Completion",
    "InfraError",
    "LocalModelError",
    "ModelClient",
    "ModelConfig",
    "ModelRequestError",
    "ResponseCache",
    "SimServer",
    "UsageStats",
    "cache_key",
    "clear_clients",
    "ensure_local_server",
    "find_gguf",
    "get_client",
    "is_deterministic",
    "stop_local_server",
]


def __getattr__(name: str):
    # Lazy, so `python -m harness_learning.harnesses.llm.simserver` does not import its module
    # twice.
    if name == "SimServer":
        from harness_learning.harnesses.llm.simserver import SimServer

        return SimServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
