"""Tracing of the adaptation itself, off unless asked for (`AdaptConfig.trace`, or
`HARNESS_LEARNING_TRACE` for any run); off, `tracer_for` gives None, nothing here imports
opentelemetry or LangChain's callbacks, and every call site's `if tracer is None` is all
tracing costs.

`otel`: OpenTelemetry spans per round, per graph node (a candidate's with its verdict), per
model call (Solver and Proposer, with tokens and cost), sent to the global tracer provider as
an instrumented library's are: the application sets the provider and its exporters. A process
that set none, with `OTEL_TRACES_EXPORTER` (`console` or `otlp`) in its environment, gets an
SDK provider built from it (`configure_from_env`), so the command line exports too. Model-call
spans follow OTel's GenAI conventions (`gen_ai.*`); the project's own facts (role, cost,
cache, round, candidate, score, validity) are `harness_learning.*` attributes.

`langchain`: each model call is a chat-model run of the LangChain callbacks of the graph node
that made it (LangGraph reports the nodes), so LangSmith (`LANGSMITH_TRACING=true`) or any
callback handler sees the Solver and Proposer calls under their candidate.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import LLMResult
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span

TRACE_ENV = "HARNESS_LEARNING_TRACE"
TRACE_MODES = ("none", "otel", "langchain")
SCOPE = "harness_learning"
PREFIX = "harness_learning."
_REQUEST_PARAMS = {"temperature": "temperature", "max_tokens": "max_tokens", "top_p": "top_p",
                   "seed": "seed"}


def trace_mode(configured: str | None) -> str:
    """The mode in force: the environment's switch, else the run's setting ("none" if unset)."""
    mode = os.environ.get(TRACE_ENV) or configured or "none"
    if mode not in TRACE_MODES:
        raise ValueError(f"trace {mode!r}: expected one of {', '.join(TRACE_MODES)}")
    return mode


def tracer_for(configured: str | None) -> Tracer | CallbackTracer | None:
    """The run's tracer, or None when tracing is off (nothing imported, nothing made)."""
    mode = trace_mode(configured)
    if mode == "none":
        return None
    if mode == "langchain":
        return CallbackTracer()
    try:
        from opentelemetry import trace
    except ImportError:
        raise ValueError("trace 'otel' needs OpenTelemetry: pip install "
                         "'harness-learning[tracing]'") from None
    configure_from_env(trace)
    return Tracer(trace)


def configure_from_env(trace: ModuleType) -> None:
    """An SDK provider exporting to `OTEL_TRACES_EXPORTER` (console: stderr; otlp: the
    `OTEL_EXPORTER_OTLP_*` endpoint), only where the process set no provider of its own."""
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")[0].strip()
    if exporter_name in ("", "none") or not _unset(trace):
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter_name == "console":  # stdout carries the commands' --json line
        exporter: SpanExporter = ConsoleSpanExporter(out=sys.stderr)
    elif exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    else:
        raise ValueError(f"OTEL_TRACES_EXPORTER={exporter_name!r}: expected console or otlp "
                         "(or configure a tracer provider in your own code)")
    service = os.environ.get("OTEL_SERVICE_NAME", "harness-learn")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


def _unset(trace: ModuleType) -> bool:
    return type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"


class Tracer:
    """Makes the spans; one per run context. Spans nest through the current OTel context."""

    def __init__(self, trace: ModuleType) -> None:
        self._trace = trace
        self.tracer = trace.get_tracer(SCOPE)

    def start(self, name: str, parent: Span | None = None, **attributes: object) -> Span:
        """A span that the caller ends (a round outlives any one node); `parent` a span, else
        the current one."""
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        return self.tracer.start_span(name, context=context, attributes=clean(attributes))

    @contextlib.contextmanager
    def span(self, name: str, parent: Span | None = None,
             **attributes: object) -> Iterator[Span]:
        """A span around a block, current inside it (so model calls nest under it); an
        exception is recorded on it and passed on."""
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        with self.tracer.start_as_current_span(name, context=context,
                                               attributes=clean(attributes)) as span:
            yield span

    @contextlib.asynccontextmanager
    async def model_call(self, role: str, model: str, params: dict[str, Any],
                         messages: object = None) -> AsyncIterator[Traced]:
        """The span of one Solver or Proposer call; the block sets `call.result`."""
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                      f"{PREFIX}role": role}
        attributes.update({f"gen_ai.request.{name}": params[key]
                           for key, name in _REQUEST_PARAMS.items() if key in params})
        call = Traced()
        with self.span(f"chat {model}", **attributes) as span:
            yield call
            completed(span, call.result)

    @contextlib.asynccontextmanager
    async def tool_call(self, name: str, args: dict[str, Any]) -> AsyncIterator[Traced]:
        """The span of one call of a user's tool (an MCP server's among them)."""
        call = Traced()
        with self.span(f"execute_tool {name}", **{"gen_ai.operation.name": "execute_tool",
                                                 "gen_ai.tool.name": name}) as span:
            yield call
            meta = getattr(call.result, "meta", None) or {}
            span.set_attributes(clean({"cached": getattr(call.result, "cached", None),
                                       "truncated_from": meta.get("truncated_from")}))


@dataclass
class Traced:
    """What a traced call's block hands back: the model's completion, or the tool's reply."""

    result: Any = None


class CallbackTracer:
    """Model calls as chat-model runs of the running node's LangChain callbacks (the node's
    config is the context's: the sandbox serves a traced run's calls in its context)."""

    @contextlib.asynccontextmanager
    async def model_call(self, role: str, model: str, params: dict[str, Any],
                         messages: object = None) -> AsyncIterator[Traced]:
        call = Traced()
        manager = _callbacks()
        if not manager.handlers:
            yield call
            return
        (run,) = await manager.on_chat_model_start(
            {"name": model, "id": ["harness_learning", role.title()]}, [_messages(messages)],
            name=role.title(), invocation_params={"model": model, "role": role, **params})
        try:
            yield call
        except BaseException as exc:
            await run.on_llm_error(exc)
            raise
        await run.on_llm_end(_llm_result(call.result))

    @contextlib.asynccontextmanager
    async def tool_call(self, name: str, args: dict[str, Any]) -> AsyncIterator[Traced]:
        """A user tool's call as a tool run of the running node's callbacks."""
        call = Traced()
        manager = _callbacks()
        if not manager.handlers:
            yield call
            return
        run = await manager.on_tool_start({"name": name, "description": "tools.call"},
                                          json.dumps(args, default=str)[:20_000], inputs=args,
                                          name=name)
        try:
            yield call
        except BaseException as exc:
            await run.on_tool_error(exc)
            raise
        await run.on_tool_end(getattr(call.result, "result", call.result))


def _callbacks() -> Any:
    """The callback manager of the node running here (its config is the context's)."""
    from langchain_core.runnables.config import (
        ensure_config,
        get_async_callback_manager_for_config,
    )

    return get_async_callback_manager_for_config(ensure_config())


def _messages(messages: object) -> list[BaseMessage]:
    from langchain_core.messages import HumanMessage, convert_to_messages

    if isinstance(messages, str):
        return [HumanMessage(messages)]
    try:
        return convert_to_messages(messages or [])
    except Exception:  # a shape LangChain does not read: shown as text
        return [HumanMessage(str(messages))]


def _llm_result(completion: object) -> LLMResult:
    """A completion as LangChain's result, with its token usage and cost."""
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, LLMResult

    prompt = int(getattr(completion, "prompt_tokens", 0) or 0)
    output = int(getattr(completion, "completion_tokens", 0) or 0)
    message = AIMessage(content=str(getattr(completion, "text", "") or ""), usage_metadata={
        "input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output})
    usage = {"prompt_tokens": prompt, "completion_tokens": output,
             "total_tokens": prompt + output}
    return LLMResult(generations=[[ChatGeneration(message=message)]], llm_output={
        "model_name": getattr(completion, "model", None), "token_usage": usage,
        "cost_usd": getattr(completion, "cost", None),
        "cached": bool(getattr(completion, "cached", False))})


def completed(span: Span, completion: object) -> None:
    """A model call's answer on its span: tokens, finish reason, cost, cache, latency."""
    finish = getattr(completion, "finish_reason", None)
    span.set_attributes(clean({
        "gen_ai.response.model": getattr(completion, "model", None),
        "gen_ai.usage.input_tokens": getattr(completion, "prompt_tokens", None),
        "gen_ai.usage.output_tokens": getattr(completion, "completion_tokens", None),
        "gen_ai.response.finish_reasons": [finish] if finish else None,
        f"{PREFIX}cost_usd": getattr(completion, "cost", None),
        f"{PREFIX}cached": getattr(completion, "cached", None),
        f"{PREFIX}latency_s": getattr(completion, "latency_s", None)}))


def clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes OTel takes: None dropped, names put under `harness_learning.` unless they
    are GenAI's, anything not a primitive (or a list of them) as text."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        name = key if key.startswith(("gen_ai.", PREFIX)) else f"{PREFIX}{key}"
        if isinstance(value, list | tuple):
            value = [v if isinstance(v, str | bool | int | float) else str(v) for v in value]
        elif not isinstance(value, str | bool | int | float):
            value = str(value)
        out[name] = value
    return out
