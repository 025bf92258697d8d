"""The adapter: test-time harness adaptation as a LangGraph graph.

```
init -> sample -> evaluate_current -> candidate x N (Send) -> race -> select -> sample ... -> finish
```
`race` passes through unless the policy is "racing": then the candidates only propose and
validate, and `race` evaluates the valid ones together in stages (graphs/adapter/racing.py).
"""

from __future__ import annotations

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import make_nodes, stop_reason
from harness_learning.graphs.adapter.race_round import make_race_node
from harness_learning.graphs.adapter.state import AdapterState
from langgraph.graph import END, START, StateGraph


def build_adapter_graph(config: AdaptConfig, ctx: AdapterContext) -> StateGraph:
    """The uncompiled adapter graph for `config` (track defaults must already be filled); its
    nodes share `ctx`, which the caller opens and closes."""
    nodes = make_nodes(ctx)

    def route(state: AdapterState) -> str:
        return "finish" if stop_reason(config, state) else "sample"

    async def finish(state: AdapterState) -> dict:
        reason = stop_reason(config, state) or "stopped"
        await ctx.store.aappend_event("run_finished", {"reason": reason,
                                                       "current_sha": state["current_sha"]})
        return {"stop_reason": reason}

    graph = StateGraph(AdapterState)
    for name in ("init", "sample", "evaluate_current", "candidate", "select"):
        graph.add_node(name, nodes[name])
    graph.add_node("race", make_race_node(ctx))
    graph.add_node("finish", finish)
    graph.add_edge(START, "init")
    graph.add_conditional_edges("init", route, ["sample", "finish"])
    graph.add_edge("sample", "evaluate_current")
    graph.add_conditional_edges("evaluate_current", nodes["fan_out"], ["candidate"])
    graph.add_edge("candidate", "race")
    graph.add_edge("race", "select")
    graph.add_conditional_edges("select", route, ["sample", "finish"])
    graph.add_edge("finish", END)
    return graph
