"""Turn what litellm (and the transport under it) raises into `InfraError` or
`ModelRequestError`, and compute retry waits.

Only the parent's own failures are infrastructure: a request the endpoint refused as invalid
(400, 413, 422, or a 5xx whose body is a request-validation error, as llama-cpp-python's
server answers a `temperature="hot"`) is the caller's fault, so a harness cannot choose which
of its problems go unscored by sending bad parameters. 401, 403, 404, 408 and 429 stay
infrastructure. A body that could not be read is `malformed` only when the endpoint answered
with success: the same words in an error body do not make it one."""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from types import ModuleType
from typing import Any

from harness_learning.harnesses.llm.errors import InfraError, ModelRequestError

_BODY_LOCATION = re.compile(r"""['"]loc['"]\s*:\s*[\(\[]\s*['"]body['"]""")


def refused_request(text: str) -> bool:
    """`text` (an error body) is a pydantic/FastAPI validation error about the request's body:
    `1 validation error: {'type': 'float_parsing', 'loc': ('body', 'temperature'), ...}`, or
    FastAPI's `{"detail": [{"loc": ["body", "messages"], ...}]}`, whatever status it came with."""
    return bool(_BODY_LOCATION.search(text)) and (
        "validation error" in text.lower() or '"detail"' in text)

_MALFORMED_HINTS = (
    "JSONDecodeError",
    "Expecting value",
    "Expecting property name",
    "Unterminated string",
    "Invalid JSON",
    "Invalid response object",
    "validation error",
)


def classify(exc: BaseException, litellm: ModuleType) -> InfraError | ModelRequestError | None:
    """The error to raise for `exc`, or None when `exc` is not a model-call failure (a bug)."""
    if isinstance(exc, InfraError | ModelRequestError):
        return exc
    text = f"{type(exc).__name__}: {exc}"
    status = answered_status(exc)
    if isinstance(exc, litellm.Timeout | TimeoutError) or status == 408:
        return InfraError("timeout", text)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return InfraError("rate_limit", text, retry_after_s=retry_after(exc))
    if (status is None or 200 <= status < 300) and (
            _decode_failed(exc) or any(h in text for h in _MALFORMED_HINTS)):
        return InfraError("malformed", text)
    if status in (401, 403, 404) or isinstance(
        exc, litellm.AuthenticationError | litellm.PermissionDeniedError | litellm.NotFoundError
    ):
        return InfraError("config", text)
    if status in (400, 413, 422) or isinstance(
            exc, litellm.BadRequestError | litellm.UnprocessableEntityError):
        return ModelRequestError(text)
    if isinstance(status, int) and status >= 500 and refused_request(text):
        return ModelRequestError(f"the endpoint refused the request as invalid: {text}")
    if isinstance(exc, litellm.APIConnectionError) or _lost_connection(exc):
        return InfraError("connection", text)
    if isinstance(status, int) and status >= 500:
        return InfraError("server", text)
    if isinstance(exc, litellm.APIError | litellm.InternalServerError):
        return InfraError("server", text)
    if "No deployments available" in text:  # every replica cooling down after failures
        return InfraError("rate_limit", text, retry_after_s=retry_after(exc))
    return None


def answered_status(exc: BaseException) -> int | None:
    """The HTTP status the endpoint really answered with, or None when it answered with
    success (or not at all). litellm reports a 2xx whose body is not JSON as a 500: the cause
    chain tells them apart (an `httpx.HTTPStatusError` carries a real error status; a
    `JSONDecodeError` without one means the body came with success)."""
    chain = list(_causes(exc))
    for cause in chain:
        if type(cause).__name__ == "HTTPStatusError":
            code = getattr(getattr(cause, "response", None), "status_code", None)
            if isinstance(code, int):
                return code
    if any(isinstance(cause, json.JSONDecodeError) for cause in chain):
        return None
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _decode_failed(exc: BaseException) -> bool:
    return any(isinstance(cause, json.JSONDecodeError) for cause in _causes(exc))


def _causes(exc: BaseException) -> Any:
    """`exc` and what caused it, each once."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


_CONNECTION_ERROR_NAMES = frozenset(
    {"APIConnectionError", "ConnectError", "ClientConnectorError", "ServerDisconnectedError",
     "RemoteProtocolError", "ReadError", "ClientOSError"}
)  # fmt: skip


def _lost_connection(exc: BaseException) -> bool:
    """True when the cause chain shows the endpoint was unreachable or hung up (litellm
    reports some of these as a 500 "Connection error.")."""
    return any(isinstance(cause, ConnectionError) or type(cause).__name__ in _CONNECTION_ERROR_NAMES
               for cause in _causes(exc))


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
