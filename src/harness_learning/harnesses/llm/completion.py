"""`Completion` (one answer) and `UsageStats` (what a client has spent)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from harness_learning.harnesses.text_safety import for_storage


@dataclass(frozen=True, slots=True)
class Completion:
    """One model answer. `cached` is True when no request was made for it (a cache hit, or a
    share of an identical in-flight call); then `cost` is 0 and `latency_s` is the wait."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    finish_reason: str | None
    cached: bool
    model: str
    cost: float | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    """The sampled tokens with their log-probs, when the request asked for them and the
    endpoint returned them (llama.cpp and vLLM do): what offline GRPO's importance ratio needs."""

    def __post_init__(self) -> None:
        # A reply arrives as JSON, whose `\ud800` decodes to a lone surrogate: text that no log,
        # trace, bridge line or terminal could take. It is U+FFFD from here on.
        if isinstance(self.text, str):
            object.__setattr__(self, "text", for_storage(self.text))

    def to_dict(self) -> dict[str, Any]:
        # Scalars, plus log-probs as JSON-ready dicts (asdict would deep-copy everything).
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if self.logprobs is not None:
            data["logprobs"] = [t.to_dict() for t in self.logprobs]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if values.get("logprobs") is not None:
            values["logprobs"] = tuple(TokenLogprob(str(t["token"]), float(t["logprob"]))
                                       for t in values["logprobs"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One sampled token (as the endpoint's tokenizer wrote it) and its log-probability."""

    token: str
    logprob: float

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "logprob": self.logprob}


LOGPROB_PARAMS: dict[str, Any] = {"logprobs": True, "top_logprobs": 1}
"""Request parameters that make an OpenAI-compatible endpoint return the sampled tokens'
log-probs; llama.cpp's server returns none unless `top_logprobs` is at least 1."""


def parse_logprobs(raw: object) -> tuple[TokenLogprob, ...] | None:
    """The `choices[0].logprobs` of an OpenAI chat response (a dict or litellm's object) as
    tokens with log-probs; None when the endpoint sent none or something unreadable (log-probs
    are a by-product: their absence never fails a call)."""
    content = raw.get("content") if isinstance(raw, dict) else getattr(raw, "content", None)
    if not content:
        return None
    out = []
    for item in content:
        token = item.get("token") if isinstance(item, dict) else getattr(item, "token", None)
        value = item.get("logprob") if isinstance(item, dict) else getattr(item, "logprob", None)
        if not isinstance(token, str) or not isinstance(value, int | float):
            return None
        out.append(TokenLogprob(token, float(value)))
    return tuple(out)


@dataclass
class UsageStats:
    """Counters of one client. `calls` counts answers obtained from the model (after any
    retries), `requests` HTTP attempts, `cache_hits` answers from the persistent cache,
    `shared` answers taken from an identical in-flight call; tokens, latency and cost count
    only requests actually made."""

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    shared: int = 0
    retries: int = 0
    infra_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def error(self, kind: str) -> None:
        with self._lock:
            self.infra_errors += 1
            self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            data = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
            data["errors_by_kind"] = dict(self.errors_by_kind)
            return data
