"""OpenTelemetry spans of the adaptation itself: per round, per graph node (a candidate's with
its verdict), per model call (Solver and Proposer, with tokens and cost).

Off unless asked for (`AdaptConfig.trace = "otel"`, or `HARNESS_LEARNING_TRACE=otel` for any
run): then `tracer_for` gives None, opentelemetry is never imported, and every call site's
`if tracer is None` is all tracing costs. On, spans go to the global tracer provider, as an
instrumented library's do: the application sets the provider and its exporters. A process
that set none, with `OTEL_TRACES_EXPORTER` (`console` or `otlp`) in its environment, gets an
SDK provider built from it (`configure_from_env`), so the command line exports too.

Model-call spans follow OTel's GenAI conventions (`gen_ai.*`); the project's own facts (role,
cost, cache, round, candidate, score, validity) are `harness_learning.*` attributes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

TRACE_ENV = "HARNESS_LEARNING_TRACE"
TRACE_MODES = ("none", "otel")
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


def tracer_for(configured: str | None) -> Tracer | None:
    """The run's tracer, or None when tracing is off (nothing imported, nothing made)."""
    if trace_mode(configured) == "none":
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        raise ValueError("trace 'otel' needs OpenTelemetry: pip install "
                         "'harness-learning[tracing]'") from None
    configure_from_env(trace)
    return Tracer(trace)


def configure_from_env(trace: Any) -> None:
    """An SDK provider exporting to `OTEL_TRACES_EXPORTER` (console: stderr; otlp: the
    `OTEL_EXPORTER_OTLP_*` endpoint), only where the process set no provider of its own."""
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")[0].strip()
    if exporter_name in ("", "none") or not _unset(trace):
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter_name == "console":  # stdout carries the commands' --json line
        exporter: Any = ConsoleSpanExporter(out=sys.stderr)
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


def _unset(trace: Any) -> bool:
    return type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"


class Tracer:
    """Makes the spans; one per run context. Spans nest through the current OTel context."""

    def __init__(self, trace: Any) -> None:
        self._trace = trace
        self.tracer = trace.get_tracer(SCOPE)

    def start(self, name: str, parent: Any = None, **attributes: Any) -> Any:
        """A span that the caller ends (a round outlives any one node); `parent` a span, else
        the current one."""
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        return self.tracer.start_span(name, context=context, attributes=clean(attributes))

    @contextlib.contextmanager
    def span(self, name: str, parent: Any = None, **attributes: Any) -> Iterator[Any]:
        """A span around a block, current inside it (so model calls nest under it); an
        exception is recorded on it and passed on."""
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        with self.tracer.start_as_current_span(name, context=context,
                                               attributes=clean(attributes)) as span:
            yield span

    @contextlib.contextmanager
    def model_call(self, role: str, model: str, params: dict[str, Any]) -> Iterator[Any]:
        """The span of one Solver or Proposer call; `completed` fills in its answer."""
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                      f"{PREFIX}role": role}
        attributes.update({f"gen_ai.request.{name}": params[key]
                           for key, name in _REQUEST_PARAMS.items() if key in params})
        with self.span(f"chat {model}", **attributes) as span:
            yield span


def completed(span: Any, completion: Any) -> None:
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
