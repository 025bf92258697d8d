"""The adapter: test-time harness adaptation as a LangGraph graph.

```
init -> sample -> evaluate_current -> candidate x N (Send) -> race -> merge -> select -> sample ... -> finish
```
`race` passes through unless the policy is "racing": then the candidates only propose and
validate, and `race` evaluates the valid ones together in stages (graphs/adapter/racing.py).
`merge` passes through unless `merge` is on: then it judges the merge of the round's two best
valid candidates as one more candidate (graphs/adapter/merge_round.py); `select` applies the
policy to them all.

The graph's shape does not depend on the run's settings: every node gets the run's resources
(an `AdapterContext`) from its source when it runs. The CLI gives the context of the run it
opened; a server gives an async source that opens the thread's run from its settings or its
checkpointed `run_dir` (`graphs.adapter.server_threads`), so one compiled graph serves any thread.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.context_schema import AdapterSettings
from harness_learning.graphs.adapter.merge_round import make_merge_node
from harness_learning.graphs.adapter.nodes import make_nodes, stop_reason
from harness_learning.graphs.adapter.race_round import make_race_node
from harness_learning.graphs.adapter.rounds import make_round_nodes
from harness_learning.graphs.adapter.state import AdapterInput, AdapterOutput, AdapterState

ContextSource = Callable[[Mapping[str, Any], Runtime | None], Awaitable[AdapterContext]]
"""(state or Send payload, runtime) -> the run's opened context."""
FinishHook = Callable[[AdapterContext], Awaitable[None]]
"""Awaited by `finish` once the run's end is logged: what a server's run does at its end that
the command line does after the graph returns (adding the run's changes to its experience
library, `run.keep_experience`)."""

NODES = ("init", "sample", "evaluate_current", "candidate", "race", "merge", "select", "finish")


def _steps(ctx: AdapterContext, on_finish: FinishHook | None = None) -> dict[str, Any]:
    """The node functions of one run, bound to its context (each in its span, when the run
    is traced: `trace_spans`)."""
    steps = {**make_nodes(ctx), **make_round_nodes(ctx), "race": make_race_node(ctx),
             "merge": make_merge_node(ctx)}

    def route(state: AdapterState) -> str:
        return "finish" if stop_reason(ctx.config, state) else "sample"

    async def finish(state: AdapterState) -> dict:
        reason = stop_reason(ctx.config, state) or "stopped"
        await ctx.store.aappend_event("run_finished", {"reason": reason,
                                                       "current_sha": state["current_sha"]})
        if on_finish is not None:
            await on_finish(ctx)
        return {"stop_reason": reason}

    steps = {**steps, "route": route, "finish": finish}
    spans = ctx.spans
    if spans is None:
        return steps
    for name in NODES:
        steps[name] = functools.partial(spans.node, name, step=steps[name])
    return steps


def _binder(source: AdapterContext | ContextSource, on_finish: FinishHook | None = None
            ) -> Callable[[Mapping[str, Any], Runtime | None], Awaitable[dict[str, Any]]]:
    """(state, runtime) -> the steps of the run that state belongs to, its resources built
    off the event loop (`AdapterContext.ready`)."""
    made: dict[int, tuple[AdapterContext, dict[str, Any]]] = {}

    async def steps(state: Mapping[str, Any], runtime: Runtime | None) -> dict[str, Any]:
        ctx = source if isinstance(source, AdapterContext) else await source(state, runtime)
        await ctx.ready()
        entry = made.get(id(ctx))
        if entry is None or entry[0] is not ctx:
            entry = made[id(ctx)] = (ctx, _steps(ctx, on_finish))
        return entry[1]

    return steps


def build_adapter_graph(source: AdapterContext | ContextSource,
                        on_finish: FinishHook | None = None) -> StateGraph:
    """The uncompiled adapter graph. `source`: the run's context (its config's track defaults
    filled), which the caller opens and closes; or an async function giving the context of
    the run a state belongs to. Settings are the `context_schema` (`AdapterSettings`): Studio's
    settings form; what a run is given is `AdapterInput`, what it returns `AdapterOutput`.
    `on_finish`: awaited with the run's context when `finish` has logged the run's end."""
    steps = _binder(source, on_finish)

    def node(name: str) -> Callable[..., Awaitable[dict]]:
        async def run(state: dict, runtime: Runtime) -> dict:
            return await (await steps(state, runtime))[name](state)

        run.__name__ = name
        return run

    async def route(state: AdapterState, runtime: Runtime) -> str:
        return (await steps(state, runtime))["route"](state)

    async def fan_out(state: AdapterState, runtime: Runtime) -> list:
        return (await steps(state, runtime))["fan_out"](state)

    graph = StateGraph(AdapterState, context_schema=AdapterSettings,
                       input_schema=AdapterInput, output_schema=AdapterOutput)
    for name in NODES:
        graph.add_node(name, node(name))
    graph.add_edge(START, "init")
    graph.add_conditional_edges("init", route, ["sample", "finish"])
    graph.add_edge("sample", "evaluate_current")
    graph.add_conditional_edges("evaluate_current", fan_out, ["candidate"])
    graph.add_edge("candidate", "race")
    graph.add_edge("race", "merge")
    graph.add_edge("merge", "select")
    graph.add_conditional_edges("select", route, ["sample", "finish"])
    graph.add_edge("finish", END)
    return graph
