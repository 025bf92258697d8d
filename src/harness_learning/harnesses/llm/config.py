"""`ModelConfig`: which model to call, where, and how patiently."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

LOCAL_MODEL = "local"
"""A local model served by llama-cpp-python on loopback: plain `local` is SmolLM2-135M (the
Solver's default; the adapter makes a Proposer's `local` Qwen2.5-Coder-1.5B, see
`models.resolve_role`), `local:<name>` names one (`local:smollm2-135m`,
`local:qwen2.5-coder-1.5b`)."""
LOCAL_PREFIX = LOCAL_MODEL + ":"

LOCAL_DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 256}
"""The local model answers greedily and briefly unless told otherwise (greedy calls are cached).
The lowest layer of a call's parameters (see `ModelConfig.call_params`): kept out of `params`,
which holds only what the user wrote, so a run's defaults for a role can sit between the two."""

_URL_START = re.compile(r"@(?=https?://)")


@dataclass(slots=True)
class ModelConfig:
    """One model and its endpoints.

    `model` is a litellm model string ("openai/NAME", "anthropic/...") or `"local"`.
    `api_base` is one URL or several: several URLs are replicas of the same model, balanced
    with litellm's Router. `params` are the completion parameters the user wrote for this model
    (temperature, max_tokens, seed, ...; a spec's `?key=value`); they win over a run's defaults
    for the model's role and lose to a call's own (see `call_params`, `spec_params`).
    `max_concurrency` bounds in-flight requests per endpoint (llama-cpp-python's server
    answers one request at a time, so `local` defaults to 1: queueing in the client keeps
    timeouts about generation, not about waiting in line). `cache` is the path of a persistent
    SQLite response cache, or None.
    """

    model: str
    api_base: str | list[str] | None = None
    api_key: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int | None = None  # None: 8, or 1 for `local` (it serves one at a time)
    timeout_s: float | None = None
    """Seconds per request: None means 120, or 600 for `local` (one CPU thread; a long Proposer
    prompt can take minutes on a busy machine)."""
    price_in: float | None = None
    """USD per million prompt tokens, for a model litellm's price list does not know (one at
    an endpoint of one's own); with `price_out`, it overrides the list (`harnesses.llm.prices`)."""
    price_out: float | None = None
    """USD per million completion tokens (see `price_in`)."""
    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    cache: str | Path | None = None
    transport: str = "litellm"
    """`litellm`, or `direct`: plain HTTP to one OpenAI-compatible endpoint, for rounds whose
    call rate makes litellm's client CPU the bottleneck (see `harnesses.llm.direct`)."""
    local_server: str = ""
    """Which of this process's servers of a local model answers: clients naming different
    ones get a server each, so the Solver and the Proposer on the same model (the paper's
    same-model setup) do not queue behind each other."""
    serve_logprobs: bool | None = None
    """A local model only: serve it with every position's logits kept, so it returns the
    sampled tokens' log-probs (`LocalModel.logprobs`: slower calls, more memory); None keeps
    the model's default (off). Such a server is this client's own, never one shared through
    the environment (`local:smollm2-135m?serve_logprobs=true`)."""
    replicas: int = 1
    """A local model only: how many servers of it (one CPU thread each) answer this client,
    balanced by litellm's Router as URLs of a remote model are. A llama.cpp server answers one
    request at a time, so on a machine with N idle cores up to N replicas answer N at once
    (`local:qwen2.5-coder-1.5b?replicas=2`). A remote model's replicas are its URLs."""

    def __post_init__(self) -> None:
        if not self.model or not isinstance(self.model, str):
            raise ValueError(f"ModelConfig.model must be a non-empty string, got {self.model!r}")
        if self.max_concurrency is None:
            self.max_concurrency = 1 if self.is_local else 8
        if self.timeout_s is None:
            self.timeout_s = 600.0 if self.is_local else 120.0
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) or self.replicas < 1:
            raise ValueError(f"replicas must be an integer >= 1, got {self.replicas!r}")
        if self.serve_logprobs is not None and not self.is_local:
            raise ValueError("serve_logprobs is for local models; ask a remote endpoint for "
                             "log-probs with the completion parameter logprobs=true")
        if self.replicas > 1 and not self.is_local:
            raise ValueError(f"replicas={self.replicas} is for local models; a remote model's "
                             "replicas are its URLs (MODEL@URL1,URL2)")
        if self.max_retries < 0 or self.timeout_s <= 0:
            raise ValueError("max_retries must be >= 0 and timeout_s > 0")
        for name in ("price_in", "price_out"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or value < 0):
                raise ValueError(f"{name} must be a number >= 0 (USD per million tokens), "
                                 f"got {value!r}")
        if isinstance(self.api_base, list | tuple):
            self.api_base = [str(b) for b in self.api_base] or None
        if self.transport not in ("litellm", "direct"):
            raise ValueError(f"transport must be 'litellm' or 'direct', got {self.transport!r}")
        if self.transport == "direct" and (
            not self.model.startswith("openai/") or len(self.endpoints) != 1
        ):
            raise ValueError("transport 'direct' needs an 'openai/NAME' model and one api_base URL")

    def call_params(self, asked: dict[str, Any]) -> dict[str, Any]:
        """What one request sends: a local model's greedy, short defaults, under the user's
        `params`, under the call's own `asked`."""
        base = LOCAL_DEFAULT_PARAMS if self.is_local else {}
        return {**base, **self.params, **asked}

    @property
    def is_local(self) -> bool:
        """`local` or `local:<name>`: served on loopback by this process."""
        return self.model == LOCAL_MODEL or self.model.startswith(LOCAL_PREFIX)

    @property
    def local_name(self) -> str | None:
        """Which local model (`smollm2-135m`, ...), or None for a remote one."""
        if self.model == LOCAL_MODEL:
            from harness_learning.harnesses.llm.models import SMOLLM2

            return SMOLLM2
        return self.model[len(LOCAL_PREFIX):] if self.model.startswith(LOCAL_PREFIX) else None

    @property
    def returns_logprobs(self) -> bool:
        """Whether asking for log-probs is worth it: a local model only when it is served with
        them (`serve_logprobs`, else `LocalModel.logprobs`); a remote endpoint is assumed to
        return them."""
        name = self.local_name
        if name is None:
            return True
        if self.serve_logprobs is not None:
            return self.serve_logprobs
        from harness_learning.harnesses.llm.models import local_model

        return local_model(name).logprobs

    @property
    def endpoints(self) -> list[str]:
        """The configured base URLs (empty when litellm picks the provider's default)."""
        if self.api_base is None:
            return []
        return [self.api_base] if isinstance(self.api_base, str) else list(self.api_base)

    def with_(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def key(self) -> str:
        """A canonical string: equal configs share one client (see `get_client`)."""
        data = asdict(self)
        data["cache"] = str(self.cache) if self.cache is not None else None
        return json.dumps(data, sort_keys=True, default=str)

    @classmethod
    def parse(cls, spec: str, **overrides: Any) -> ModelConfig:
        """Parse a command-line model string.

        Grammar: ``MODEL[@URL[,URL...]][?key=value&key=value...]``, for example
        ``local``, ``openai/qwen@http://127.0.0.1:8000/v1``,
        ``openai/qwen@http://h1:8000/v1,http://h2:8000/v1?temperature=0&max_tokens=64``.
        URLs must start with http:// or https://. Query keys that name a `ModelConfig` field
        (max_concurrency, timeout_s, max_retries, api_key, cache, transport, price_in, price_out,
        replicas, serve_logprobs) set that field; any other key
        is a completion parameter, which wins over a run's defaults for the model's role
        (`solver_params`, `proposer_params`; see `spec_params`). Values are read as JSON when
        they parse (0, 0.7, true) and as text otherwise. Keyword `overrides` win over the string.
        """
        spec = spec.strip()
        if not spec:
            raise ValueError("empty model spec")
        query = ""
        if "?" in spec and "=" in spec.rsplit("?", 1)[1]:
            spec, query = spec.rsplit("?", 1)
        parts = _URL_START.split(spec, maxsplit=1)
        model = parts[0]
        if model.endswith(".gguf") and not model.startswith(LOCAL_PREFIX):
            model = LOCAL_PREFIX + model  # a GGUF file's path: serve it locally
        urls = [u.strip() for u in parts[1].split(",") if u.strip()] if len(parts) > 1 else []
        fields: dict[str, Any] = {}
        params: dict[str, Any] = {}
        for item in filter(None, query.split("&")):
            name, sep, raw = item.partition("=")
            if not sep or not name:
                raise ValueError(f"model spec {spec!r}: bad option {item!r} (want key=value)")
            value = _read_value(raw)
            (fields if name in _FIELD_OPTIONS else params)[name] = value
        api_base: str | list[str] | None = urls[0] if len(urls) == 1 else (urls or None)
        kwargs: dict[str, Any] = {"model": model, "api_base": api_base, "params": params, **fields}
        kwargs.update(overrides)
        return cls(**kwargs)

    @classmethod
    def coerce(cls, value: ModelConfig | str | dict[str, Any]) -> ModelConfig:
        """Accept a config, a spec string (see `parse`) or a dict of fields."""
        if isinstance(value, ModelConfig):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"cannot make a ModelConfig from {type(value).__name__}")


def spec_params(client: object) -> dict[str, Any]:
    """The completion parameters a client's model spec names (`local?max_tokens=64`), for
    callers that hold run-wide defaults (`solver_params`, `proposer_params`): a spec is what the
    user wrote for that model, so its parameters win over those defaults, and a harness's own
    call parameters win over both. A local model's built-in defaults are not the user's and
    lose to the run's. A client without a `ModelConfig` names none."""
    config = getattr(client, "config", None)
    return dict(config.params) if isinstance(config, ModelConfig) else {}


_FIELD_OPTIONS = {
    "api_key",
    "max_concurrency",
    "timeout_s",
    "max_retries",
    "backoff_s",
    "max_backoff_s",
    "cache",
    "transport",
    "price_in",
    "price_out",
    "replicas",
    "serve_logprobs",
}


def _read_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
