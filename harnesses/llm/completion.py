"""`Completion` (one answer) and `UsageStats` (what a client has spent)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


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

    def to_dict(self) -> dict[str, Any]:
        # Every field is a scalar, so a shallow copy is the whole copy (asdict deep-copies).
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


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
