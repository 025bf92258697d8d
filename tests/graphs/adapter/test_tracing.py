"""The adaptation's own OpenTelemetry spans: one real round with the real local Solver
(SmolLM2-135M) and a scripted Proposer (control flow), exported in process. The round's span
holds the node spans; each candidate's holds its Proposer call and the Solver calls of its
evaluation, with tokens, cost, score and validity. Off, no tracer and no span exist."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import ScriptedModel, SumTask

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.tracing import TRACE_ENV, tracer_for

A = "harness_learning."
LINE = " then give the final answer on the last line"
EDIT = (f'<<<<<<< SEARCH\nPROMPT = """Solve the problem. Think briefly,{LINE}\n=======\n'
        f'PROMPT = """Solve the problem. Think CAREFULLY,{LINE}\n>>>>>>> REPLACE\n')


@pytest.fixture(scope="module")
def exporter():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    trace.set_tracer_provider(provider)  # the global provider, as an application sets it
    return exported


def config(tmp_path, trace: str) -> AdaptConfig:
    return AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), solver="local", rounds=1,
                       candidates=2, policy="best_valid", edit_format="search_replace",
                       feedback=2, selection=2, concurrency=2, trace=trace,
                       solver_params={"temperature": 0.0, "max_tokens": 24}
                       ).with_track_defaults("reasoning")


@pytest.mark.slow
def test_one_real_round_is_a_tree_of_spans(local_model_url, tmp_path, exporter) -> None:
    cfg = config(tmp_path, "otel")
    # candidate 0 (its sample's seed is round * 1009 + index) edits; candidate 1 does not
    proposer = ScriptedModel(lambda prompt, params: "No edit today." if params["seed"] % 1009
                             else EDIT)
    ctx = AdapterContext.from_config(cfg, task=SumTask(4), proposer=proposer)
    final = asyncio.run(run_adaptation(cfg, context=ctx))
    assert final["stop_reason"] == "finished 1 rounds"
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    parent = {s.context.span_id: s.parent.span_id if s.parent else None for s in spans}

    def ancestors(span) -> list[str]:
        out, at = [], parent[span.context.span_id]
        while at is not None:
            out.append(by_id[at].name)
            at = parent[at]
        return out

    (adapt,) = [s for s in spans if s.name == "adapt"]
    (round_,) = [s for s in spans if s.name == "round 1"]
    assert ancestors(round_) == ["adapt"] and adapt.attributes[f"{A}task"] == "sums"
    assert round_.attributes[f"{A}decision.adopted"] in (True, False)
    assert round_.attributes[f"{A}candidates"] == 2
    assert round_.attributes[f"{A}spent.solver_calls"] > 0
    nodes = {s.name for s in spans if parent[s.context.span_id] == round_.context.span_id}
    assert nodes == {"sample", "evaluate_current", "candidate", "race", "merge", "select"}

    candidates = sorted((s for s in spans if s.name == "candidate"),
                        key=lambda s: s.attributes[f"{A}index"])
    assert [c.attributes[f"{A}valid"] for c in candidates] == [True, False], [
        c.attributes.get(f"{A}invalid_kind") for c in candidates]
    edited, empty = candidates
    assert 0.0 <= edited.attributes[f"{A}selection_score"] <= 1.0
    assert edited.attributes[f"{A}origin"] == "proposer"
    assert empty.attributes[f"{A}invalid_kind"] == "no_edit_found"
    calls = [s for s in spans if s.name.startswith("chat ")]
    under = {c.context.span_id: [s for s in calls if parent[s.context.span_id] ==
                                 c.context.span_id] for c in candidates}
    roles = {c.attributes[f"{A}index"]: sorted(s.attributes[f"{A}role"] for s in under[
        c.context.span_id]) for c in candidates}
    # the edited candidate: its Proposer call, then the Solver on its 2 selection problems
    # (and on the judge's memorisation probes); the other: its Proposer call alone
    assert roles[0].count("proposer") == 1 and roles[0].count("solver") >= 2
    assert roles[1] == ["proposer"]
    solver = next(s for s in under[edited.context.span_id] if s.attributes[f"{A}role"] == "solver")
    assert solver.attributes["gen_ai.request.model"] == "local"
    assert solver.attributes["gen_ai.usage.input_tokens"] > 0
    assert solver.attributes["gen_ai.usage.output_tokens"] > 0
    assert solver.attributes[f"{A}cost_usd"] == 0.0  # a local model is free
    assert solver.attributes["gen_ai.request.max_tokens"] == 24
    current = [s for s in calls if ancestors(s)[0] == "evaluate_current"]
    assert len(current) == 4  # the current version on 2 feedback + 2 selection problems


def test_off_there_is_no_tracer(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(TRACE_ENV, raising=False)
    ctx = AdapterContext.from_config(config(tmp_path, "none"))
    assert ctx.tracer is None and ctx.spans is None
    assert tracer_for("none") is None
    monkeypatch.setenv(TRACE_ENV, "otel")
    assert tracer_for("none") is not None  # the environment's switch wins
    monkeypatch.setenv(TRACE_ENV, "loud")
    with pytest.raises(ValueError, match="trace 'loud': expected one of none, otel"):
        tracer_for("none")


class Runs:
    """A LangChain callback handler that keeps each run's name, kind and parent."""

    def __init__(self) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        runs = self.runs = {}

        class Handler(BaseCallbackHandler):
            def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):
                runs[run_id] = (kw.get("name"), "chain", parent_run_id, None)

            def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None,
                                    **kw):
                runs[run_id] = (kw.get("name"), "llm", parent_run_id, None)

            def on_llm_end(self, response, *, run_id, **kw):
                name, kind, parent, _ = runs[run_id]
                runs[run_id] = (name, kind, parent, response.llm_output)

        self.handler = Handler()

    def parent_name(self, run_id) -> str | None:
        parent = self.runs[run_id][2]
        return self.runs[parent][0] if parent in self.runs else None


def test_langchain_mode_reports_model_calls_to_the_nodes_callbacks(tmp_path) -> None:
    """Control flow with scripted models: LangGraph reports the nodes to LangChain's callbacks
    (LangSmith's, with LANGSMITH_TRACING), and each model call is a chat-model run under the
    node that made it, the Solver's under the candidate whose evaluation asked."""
    from contextvars import ContextVar

    from langchain_core.tracers.context import register_configure_hook
    from scripted_sums import solver_rule

    cfg = config(tmp_path, "langchain")
    proposer = ScriptedModel(lambda prompt, params: "No edit today." if params["seed"] % 1009
                             else EDIT)
    ctx = AdapterContext.from_config(cfg, task=SumTask(4), proposer=proposer,
                                     solver=ScriptedModel(solver_rule))
    assert ctx.spans is None  # no OTel spans in this mode
    seen = Runs()
    hook: ContextVar = ContextVar("test_tracing_runs", default=None)
    register_configure_hook(hook, inheritable=True)  # as LangSmith's tracer is added
    token = hook.set(seen.handler)
    try:
        asyncio.run(run_adaptation(cfg, context=ctx))
    finally:
        hook.reset(token)
    llm = {run_id: run for run_id, run in seen.runs.items() if run[1] == "llm"}
    by_name = {}
    for run_id, (name, *_rest) in llm.items():
        by_name.setdefault(name, []).append(seen.parent_name(run_id))
    assert sorted(by_name["Proposer"]) == ["candidate", "candidate"]
    # the current version's evaluation, and the edited candidate's
    assert set(by_name["Solver"]) == {"evaluate_current", "candidate"}
    usage = next(run[3] for run in llm.values() if run[0] == "Solver")["token_usage"]
    assert usage["total_tokens"] > 0


def test_a_user_tools_call_is_a_span_of_its_own(exporter) -> None:
    """A traced toolbox's user tool call (an MCP server's tool is one) is an `execute_tool`
    span; a failing call's span records the error and the harness still gets it."""
    from opentelemetry import trace

    from harness_learning.harnesses.contract import ToolInputError
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning.harnesses.tracing import Tracer
    from harness_learning.harnesses.usertools import UserToolError, build_user_tools

    def add(a: int, b: int) -> int:
        """The sum of two integers."""
        if a < 0:
            raise ValueError("negative")
        return a + b

    exporter.clear()
    toolbox = Toolbox(user_tools=build_user_tools([add]), tracer=Tracer(trace))
    reply = asyncio.run(toolbox.call("tool", {"name": "add", "args": {"a": 2, "b": 3}}))
    assert reply.result == 5
    with pytest.raises(UserToolError, match="negative"):  # the user's tool raised
        asyncio.run(toolbox.call("tool", {"name": "add", "args": {"a": -1, "b": 3}}))
    with pytest.raises(ToolInputError, match="missing argument 'b'"):
        asyncio.run(toolbox.call("tool", {"name": "add", "args": {"a": 1}}))
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["execute_tool add"] * 3
    assert spans[0].attributes["gen_ai.tool.name"] == "add"
    assert spans[0].attributes[f"{A}cached"] is False and spans[0].status.is_ok
    assert [s.status.status_code.name for s in spans[1:]] == ["ERROR", "ERROR"]
