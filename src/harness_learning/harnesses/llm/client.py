"""`ModelClient`: every model call of the project goes through here (and through litellm).

One client per model config (see `get_client`). It bounds concurrency per endpoint, retries
infrastructure failures with exponential backoff and jitter (honouring Retry-After), caches
deterministic calls persistently, makes identical in-flight calls once (single-flight), and
counts tokens, latency and cost.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.llm.cache import ResponseCache, cache_key
from harness_learning.harnesses.llm.completion import Completion, UsageStats, parse_logprobs
from harness_learning.harnesses.llm.config import ModelConfig
from harness_learning.harnesses.llm.direct import DirectTransport
from harness_learning.harnesses.llm.errors import InfraError, ModelRequestError
from harness_learning.harnesses.llm.failures import backoff_s, classify
from harness_learning.harnesses.llm.ledger import METERED
from harness_learning.harnesses.llm.litellm_loop import (
    background_loop,
    import_litellm,
    litellm_if_imported,
)
from harness_learning.harnesses.llm.local import (
    LOCAL_API_KEY,
    ensure_local_server,
    exit_note,
    litellm_model,
)
from harness_learning.harnesses.llm.prices import stated_price

if TYPE_CHECKING:
    from litellm import ModelResponse, Router

Messages = str | list[dict[str, Any]]
_RESERVED = frozenset({"model", "messages", "api_base", "base_url", "api_key", "stream"})


def normalise_messages(messages: Messages) -> list[dict[str, Any]]:
    """A prompt string becomes one user message; a list must hold role/content dicts."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages:
        raise ModelRequestError("messages must be a prompt string or a non-empty list of dicts")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise ModelRequestError(f"messages[{i}] needs 'role' and 'content': {message!r:.200}")
    return messages


def is_deterministic(params: dict[str, Any]) -> bool:
    """Greedy decoding or a fixed seed: the same request may be answered from the cache."""
    return params.get("temperature") == 0 or params.get("seed") is not None


@dataclass
class _LoopState:
    """Objects bound to one event loop (asyncio primitives and litellm's Router)."""

    semaphore: asyncio.Semaphore
    router: Router | None = None
    direct: DirectTransport | None = None
    inflight: dict[str, asyncio.Task[Completion]] = field(default_factory=dict)
    resolving: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(frozen=True)
class _Target:
    model: str
    endpoints: tuple[str, ...]
    api_key: str | None


class ModelClient:
    """Calls one model (possibly on several replica endpoints)."""

    def __init__(self, config: ModelConfig | str, cache: ResponseCache | None = None) -> None:
        self.config = ModelConfig.coerce(config)
        self.stats = UsageStats()
        if cache is None and self.config.cache is not None:
            cache = ResponseCache.shared(self.config.cache)
        self.cache = cache
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        self._target: _Target | None = None
        self._cost_unknown = False

    def __repr__(self) -> str:
        return f"ModelClient({self.config.model!r}, endpoints={self.config.endpoints})"

    # -- public API -------------------------------------------------------------------------
    accepts_empty = True
    """`acomplete` takes `allow_empty` (the toolbox asks for a harness's Solver calls)."""

    async def acomplete(self, messages: Messages, *, allow_empty: bool = False,
                        **params: Any) -> Completion:
        """`_acomplete`, the completion also put in `ledger.METERED` where a user metric's
        calls are collected (for its problem's trace, where every budget counts them)."""
        completion = await self._acomplete(messages, allow_empty=allow_empty, **params)
        metered = METERED.get()
        if metered is not None:
            metered.append(completion)
        return completion

    async def _acomplete(self, messages: Messages, *, allow_empty: bool = False,
                         **params: Any) -> Completion:
        """Ask the model; raises InfraError when the infrastructure fails after retries and
        ModelRequestError when the endpoint rejects the request itself.

        An empty completion is `InfraError("empty")` (retried) unless `allow_empty`: then it
        is the model's answer, returned as it came. A harness's own parameters (a stop
        sequence that matches at once, `max_tokens=1`) produce such answers from a healthy
        endpoint, so for its calls an empty reply is the harness's doing, not a failure to
        retry or leave unscored. Empty completions are never cached."""
        msgs = normalise_messages(messages)
        merged = self.config.call_params(params)
        bad = _RESERVED & merged.keys()
        if bad:
            raise ModelRequestError(f"parameters {sorted(bad)} are set by the ModelConfig")
        if not is_deterministic(merged):
            return await self._fetch(msgs, merged, allow_empty)
        key = cache_key(self.config.model, msgs, merged)
        flight = f"{key}:empty-ok" if allow_empty else key  # the two kinds of ask never share
        started = time.perf_counter()
        state = self._state()
        task = state.inflight.get(flight)
        if task is not None:  # asked by another problem or candidate a moment ago
            done, _ = await asyncio.shield(task)
            self.stats.add(shared=1)
            return replace(done, cached=True, cost=0.0, latency_s=time.perf_counter() - started)
        # Registered before anything awaits, so identical asks a moment later share this one.
        task = asyncio.ensure_future(self._stored_or_fetched(key, msgs, merged, allow_empty))
        state.inflight[flight] = task
        task.add_done_callback(lambda t: _forget(state.inflight, flight, t))
        completion, stored = await asyncio.shield(task)
        if not stored:
            return completion
        self.stats.add(cache_hits=1)
        return replace(completion, cached=True, cost=0.0, latency_s=time.perf_counter() - started)

    async def aclose(self) -> None:
        """Close this event loop's HTTP connections (transport "direct"; litellm owns its own)."""
        state = self._loops.get(asyncio.get_running_loop())
        if state is not None and state.direct is not None:
            direct, state.direct = state.direct, None
            await direct.close()

    def complete(self, messages: Messages, **params: Any) -> Completion:
        """Blocking form of `acomplete` (runs on a shared background event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return background_loop().run(self.acomplete(messages, **params))
        raise RuntimeError("ModelClient.complete() inside a running event loop: await acomplete()")

    # -- internals --------------------------------------------------------------------------
    async def _stored_or_fetched(
        self, key: str, msgs: list[dict[str, Any]], params: dict[str, Any], allow_empty: bool
    ) -> tuple[Completion, bool]:
        """(the completion, whether it came from the cache). SQLite is read in a thread, never
        on the event loop (a server's, shared with other runs); writes are queued for the
        cache's own writer thread."""
        if self.cache is not None:
            stored = _stored_completion(await asyncio.to_thread(self.cache.get, key))
            if stored is not None:
                return stored, True
        completion = await self._fetch(msgs, params, allow_empty)
        if self.cache is not None and not is_empty(completion):
            self.cache.put_later(key, completion.to_dict())
        return completion, False

    async def _fetch(self, msgs: list[dict[str, Any]], params: dict[str, Any],
                     allow_empty: bool = False) -> Completion:
        """One answer, retrying retryable infrastructure failures (an empty completion is one
        unless `allow_empty`)."""
        attempt = 0
        while True:
            try:
                completion = await self._request(msgs, params)
                if not allow_empty and is_empty(completion):
                    raise InfraError("empty", f"empty completion "
                                              f"(finish_reason={completion.finish_reason})")
            except InfraError as err:
                gone = ""
                if err.kind == "connection" and self.config.is_local:
                    self._target = None  # the local server died: the next try restarts it
                    gone = exit_note(self.config.local_name or "", self.config.local_server,
                                     self.config.serve_logprobs)
                if not err.retryable or attempt >= self.config.max_retries:
                    self.stats.error(err.kind)
                    if attempt == 0 and not gone:
                        raise
                    tries = f" (gave up after {attempt + 1} attempts)" if attempt else ""
                    raise InfraError(err.kind, f"{err.message}{tries}{gone}") from err
                wait = backoff_s(
                    attempt, self.config.backoff_s, self.config.max_backoff_s, err.retry_after_s
                )
                self.stats.add(retries=1)
                await asyncio.sleep(wait)
                attempt += 1
                continue
            self.stats.add(calls=1)
            return completion

    async def _request(self, msgs: list[dict[str, Any]], params: dict[str, Any]) -> Completion:
        if self.config.transport == "direct":
            return await self._request_direct(msgs, params)
        litellm = litellm_if_imported() or await asyncio.to_thread(import_litellm)
        target = await self._resolve()
        state = self._state()
        if len(target.endpoints) > 1 and state.router is None:
            state.router = self._make_router(target)
        kwargs = {**params, "messages": msgs, "timeout": self.config.timeout_s, "num_retries": 0}
        async with state.semaphore:
            started = time.perf_counter()
            try:
                if state.router is None:
                    call = litellm.acompletion(
                        model=target.model, api_base=target.endpoints[0] if target.endpoints else None,
                        api_key=target.api_key, max_retries=0, **kwargs,
                    )  # fmt: skip
                else:
                    call = state.router.acompletion(model="replicas", **kwargs)
                response = await asyncio.wait_for(call, self.config.timeout_s + 5.0)
            except Exception as exc:
                self.stats.add(requests=1)
                err = classify(exc, litellm)
                if err is None:
                    raise
                raise err from exc
            latency = time.perf_counter() - started
        self.stats.add(requests=1)
        return self._to_completion(response, latency, litellm)

    async def _request_direct(self, msgs: list[dict[str, Any]], params: dict[str, Any]
                              ) -> Completion:
        """One plain-HTTP request (transport "direct"); same bound, errors and stats."""
        target = await self._resolve()
        state = self._state()
        if state.direct is None:
            state.direct = DirectTransport(limit=self.config.max_concurrency)
        async with state.semaphore:
            try:
                completion = await state.direct.chat(
                    target.endpoints[0], target.api_key, target.model, msgs, params,
                    self.config.timeout_s)
            finally:
                self.stats.add(requests=1)
        stated = stated_price(self.config)  # no litellm here: only a stated price is known
        if stated is not None:
            completion = replace(completion, cost=stated.cost(completion.prompt_tokens,
                                                              completion.completion_tokens))
        self.stats.add(prompt_tokens=completion.prompt_tokens,
                       completion_tokens=completion.completion_tokens,
                       latency_s=completion.latency_s, cost=completion.cost or 0.0)  # fmt: skip
        return completion

    def _to_completion(self, response: ModelResponse, latency: float,
                       litellm: ModuleType) -> Completion:
        try:
            choice = response.choices[0]
            text = choice.message.content
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError, KeyError) as exc:
            raise InfraError("malformed", f"no choices/message in the response: {exc}") from exc
        if text is not None and not isinstance(text, str):
            raise InfraError("malformed", f"message content is {type(text).__name__}, not text")
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self._cost(response, litellm, prompt_tokens, completion_tokens)
        self.stats.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       latency_s=latency, cost=cost or 0.0)  # fmt: skip
        return Completion(
            text=text or "", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            latency_s=latency, finish_reason=finish, cached=False,
            model=str(getattr(response, "model", None) or self.config.model), cost=cost,
            logprobs=parse_logprobs(getattr(choice, "logprobs", None)),
        )  # fmt: skip

    def _cost(self, response: ModelResponse, litellm: ModuleType, prompt_tokens: int,
              completion_tokens: int) -> float | None:
        """The call's price (`harnesses.llm.prices`): 0 for a local model, the spec's own
        `price_in`/`price_out`, else litellm's; None for a model nothing prices."""
        stated = stated_price(self.config)
        if stated is not None:
            return stated.cost(prompt_tokens, completion_tokens)
        if self.config.endpoints:  # litellm's map may hold a 0 it made up for a Router deployment
            return None
        hidden = getattr(response, "_hidden_params", None) or {}
        if isinstance(hidden.get("response_cost"), int | float):
            return float(hidden["response_cost"])
        if self._cost_unknown:
            return None
        try:
            return float(litellm.completion_cost(completion_response=response))
        except Exception:  # unknown model or price: cost stays unknown
            self._cost_unknown = True
            return None

    async def _resolve(self) -> _Target:
        """The endpoint, found once: concurrent first calls (a round's candidates) wait for one
        lookup instead of each health-checking a local server that is already busy answering
        the first of them."""
        if self._target is None:
            async with self._state().resolving:
                if self._target is None:
                    target = await asyncio.to_thread(self._make_target)
                    with self._lock:
                        self._target = self._target or target
        return self._target

    def _make_target(self) -> _Target:
        cfg = self.config
        name = cfg.local_name
        if name is not None:
            # one server per replica; a server shared through the environment is one URL
            instances = [cfg.local_server, *(f"{cfg.local_server}#{i}" for i in range(1, cfg.replicas))]
            urls = dict.fromkeys(ensure_local_server(name=name, instance=i,
                                                     logprobs=cfg.serve_logprobs)
                                 for i in instances)
            return _Target(litellm_model(name), tuple(urls), LOCAL_API_KEY)
        key = cfg.api_key
        if key is None and cfg.endpoints and cfg.model.startswith("openai/"):
            key = os.environ.get("OPENAI_API_KEY") or "sk-no-key"  # local servers ignore it
        return _Target(cfg.model, tuple(cfg.endpoints), key)

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._loops.get(loop)
            if state is None:
                n = max(1, len(self.config.endpoints), self.config.replicas)
                state = _LoopState(asyncio.Semaphore(self.config.max_concurrency * n))
                self._loops[loop] = state
        return state

    def _make_router(self, target: _Target) -> Router:
        """litellm's Router over replicas of one model, each with its own concurrency bound."""
        litellm = import_litellm()
        deployments = [
            {
                "model_name": "replicas",
                "litellm_params": {
                    "model": target.model,
                    "api_base": base,
                    "api_key": target.api_key,
                    "max_parallel_requests": self.config.max_concurrency,
                    "max_retries": 0,
                },
            }  # fmt: skip
            for base in target.endpoints
        ]
        with warnings.catch_warnings():  # litellm's own pydantic schema warnings
            warnings.simplefilter("ignore", UserWarning)
            return litellm.Router(
                model_list=deployments, num_retries=0, routing_strategy="least-busy"
            )


def is_empty(completion: Completion) -> bool:
    """No text, or only whitespace: what the endpoint sent had nothing to read."""
    return not completion.text or not completion.text.strip()


def _stored_completion(data: dict[str, Any] | None) -> Completion | None:
    """A cached completion, or None for a miss or an entry written by an incompatible version."""
    if data is None:
        return None
    try:
        return Completion.from_dict(data)
    except (KeyError, TypeError):
        return None


def _forget(
    inflight: dict[str, asyncio.Task[Completion]], key: str, task: asyncio.Task[Completion]
) -> None:
    if inflight.get(key) is task:
        del inflight[key]
    if not task.cancelled():
        task.exception()  # retrieved here so an unawaited failure is not reported as lost
