"""Errors of the model layer.

An `InfraError` means the model could not be asked or did not answer (timeouts, rate limits,
server faults, lost connections, malformed replies, spent budgets; empty replies too, except for
a caller that takes them as answers: `ModelClient.acomplete(allow_empty=True)`). It is deliberately
a different type from anything a wrong answer produces, so the sandbox and the evaluator can
tell "the harness was wrong" from "the infrastructure failed" and never score the latter.
"""

from __future__ import annotations

INFRA_KINDS = (
    "timeout",
    "rate_limit",
    "server",
    "connection",
    "empty",
    "malformed",
    "budget",
    "config",
)
"""`config` (not retried): the endpoint rejected who we are or what we named (401/403/404)."""

RETRYABLE_KINDS = frozenset({"timeout", "rate_limit", "server", "connection", "empty", "malformed"})


class InfraError(Exception):
    """The model infrastructure failed; `kind` is one of `INFRA_KINDS`."""

    def __init__(self, kind: str, message: str, retry_after_s: float | None = None) -> None:
        if kind not in INFRA_KINDS:
            raise ValueError(f"unknown InfraError kind {kind!r}; expected one of {INFRA_KINDS}")
        super().__init__(f"[{kind}] {message}")
        self.kind = kind
        self.message = message
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    def __reduce__(self):  # keep kind across pickling (worker processes, multiprocessing)
        return (type(self), (self.kind, self.message, self.retry_after_s))


class ModelRequestError(ValueError):
    """The endpoint rejected the request itself (HTTP 400/422: context window exceeded, bad
    parameters). The caller's input is at fault, so this is not an infrastructure error and
    is not retried."""


class LocalModelError(RuntimeError):
    """A local model cannot run here (missing package, missing or corrupt GGUF, failed start)."""
