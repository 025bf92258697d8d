"""Turn what litellm (and the transport under it) raises into `InfraError` or
`ModelRequestError`, and compute retry waits."""

from __future__ import annotations

import email.utils
import json
import random
import time
from typing import Any

from harness_learning.harnesses.llm.errors import InfraError, ModelRequestError

_MALFORMED_HINTS = (
    "JSONDecodeError",
    "Expecting value",
    "Expecting property name",
    "Unterminated string",
    "Invalid JSON",
    "Invalid response object",
    "validation error",
)


def classify(exc: BaseException, litellm: Any) -> InfraError | ModelRequestError | None:
    """The error to raise for `exc`, or None when `exc` is not a model-call failure (a bug)."""
    if isinstance(exc, InfraError | ModelRequestError):
        return exc
    text = f"{type(exc).__name__}: {exc}"
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.Timeout | TimeoutError):
        return InfraError("timeout", text)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return InfraError("rate_limit", text, retry_after_s=retry_after(exc))
    if isinstance(exc, json.JSONDecodeError) or any(h in text for h in _MALFORMED_HINTS):
        return InfraError("malformed", text)
    if isinstance(
        exc, litellm.AuthenticationError | litellm.PermissionDeniedError | litellm.NotFoundError
    ):
        return InfraError("config", text)
    if isinstance(exc, litellm.BadRequestError | litellm.UnprocessableEntityError):
        return ModelRequestError(text)
    if isinstance(exc, litellm.APIConnectionError) or _lost_connection(exc):
        return InfraError("connection", text)
    if isinstance(status, int) and status >= 500:
        return InfraError("server", text)
    if isinstance(exc, litellm.APIError | litellm.InternalServerError):
        return InfraError("server", text)
    if "No deployments available" in text:  # every replica cooling down after failures
        return InfraError("rate_limit", text, retry_after_s=retry_after(exc))
    return None


_CONNECTION_ERROR_NAMES = frozenset(
    {"APIConnectionError", "ConnectError", "ClientConnectorError", "ServerDisconnectedError",
     "RemoteProtocolError", "ReadError", "ClientOSError"}
)  # fmt: skip


def _lost_connection(exc: BaseException) -> bool:
    """True when the cause chain shows the endpoint was unreachable or hung up (litellm
    reports some of these as a 500 "Connection error.")."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionError) or type(cause).__name__ in _CONNECTION_ERROR_NAMES:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header carried by `exc`, if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if not headers:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(str(value)) if value else None
    return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def backoff_s(attempt: int, base_s: float, cap_s: float, retry_after_s: float | None) -> float:
    """Exponential backoff with jitter (50-100% of the step); never shorter than the server's Retry-After."""
    wait = random.uniform(0.5, 1.0) * min(cap_s, base_s * (2**attempt))
    if retry_after_s is not None:
        wait = max(wait, min(retry_after_s, cap_s))
    return wait
