"""A direct HTTP transport for OpenAI-compatible endpoints (vLLM, llama.cpp, the SimServer).

Why: litellm costs about 5 ms of client CPU per call (measured; raw aiohttp 0.3 ms). A round
sends thousands of Solver calls from one event loop, so at short generation times, or on a
loaded machine, litellm's CPU and not the endpoint sets the round's wall time. This path posts
`/chat/completions` with one pooled aiohttp session per event loop and maps failures to the
same `InfraError` kinds as `failures.classify`. It is opt-in (`ModelConfig.transport="direct"`,
or `?transport=direct` in a spec) and serves one self-hosted endpoint; everything else (cache,
single-flight, retries, concurrency bound, stats) is the `ModelClient`'s, unchanged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import aiohttp

from harness_learning.harnesses.llm.completion import Completion, parse_logprobs
from harness_learning.harnesses.llm.errors import InfraError, ModelRequestError
from harness_learning.harnesses.llm.failures import refused_request, retry_after


def wire_model(model: str) -> str:
    """The name the endpoint knows: litellm's provider prefix removed."""
    return model.split("/", 1)[1] if model.startswith("openai/") else model


class DirectTransport:
    """One keep-alive connection pool per event loop (create it inside the loop)."""

    def __init__(self, limit: int) -> None:
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ttl_dns_cache=300),
            json_serialize=json.dumps,
        )

    async def close(self) -> None:
        await self.session.close()

    async def chat(self, base: str, api_key: str | None, model: str,
                   messages: list[dict[str, Any]], params: dict[str, Any],
                   timeout_s: float) -> Completion:
        body = {**params, "model": wire_model(model), "messages": messages}
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        url = base.rstrip("/") + "/chat/completions"
        started = time.perf_counter()
        try:
            async with self.session.post(url, json=body, headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                raw = await resp.read()
                status, resp_headers = resp.status, resp.headers
        except TimeoutError as exc:
            raise InfraError("timeout", f"no answer from {url} within {timeout_s:g} s") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise InfraError("connection", f"{type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - started
        check_status(status, raw, resp_headers, url)
        return to_completion(raw, latency, model)


def check_status(status: int, raw: bytes, headers: Mapping[str, str], url: str) -> None:
    """Raise the model layer's error for a non-2xx reply (as `failures.classify` sorts them:
    a request the endpoint refused as invalid is the caller's fault, never infrastructure)."""
    if 200 <= status < 300:
        return
    text = f"HTTP {status} from {url}: {raw[:300].decode('utf-8', 'replace')}"
    if status == 429:
        carrier = type("Reply", (), {"response": type("R", (), {"headers": headers})()})()
        raise InfraError("rate_limit", text, retry_after_s=retry_after(carrier))
    if status == 408:
        raise InfraError("timeout", text)
    if status in (401, 403, 404):
        raise InfraError("config", text)
    if status in (400, 413, 422) or (
            status >= 500 and refused_request(raw.decode("utf-8", "replace"))):
        raise ModelRequestError(text)
    raise InfraError("server", text)


def to_completion(raw: bytes, latency: float, model: str) -> Completion:
    """A `Completion` from an OpenAI chat response body; a malformed body is infra (an empty
    completion is the `ModelClient`'s to judge: see `allow_empty`)."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        text, finish = choice["message"].get("content"), choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise InfraError("malformed", f"not a chat completion: {exc}: {raw[:200]!r}") from exc
    if text is not None and not isinstance(text, str):
        raise InfraError("malformed", f"message content is {type(text).__name__}, not text")
    usage = data.get("usage") or {}
    return Completion(
        text=text or "", prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0), latency_s=latency,
        finish_reason=finish, cached=False, model=str(data.get("model") or model), cost=None,
        logprobs=parse_logprobs(choice.get("logprobs")),
    )  # fmt: skip
