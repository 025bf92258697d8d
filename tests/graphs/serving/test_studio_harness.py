"""`langgraph dev` (offline, loopback, a free port, *without* `--allow-blocking`) serves each
harness graph with the harness's own nodes and edges, read from the graph compiled in the
sandbox, and streams its state node by node and the Solver's messages, as Studio shows them
(through `langgraph_sdk`)."""

from __future__ import annotations

import asyncio

import pytest
from studio_server import ALLOW_BLOCKING_WARNING, dev_server

from harness_learning.graphs.serving.studio import MODEL_ENV, RUNS_ENV
from harness_learning.harnesses.llm import SimServer

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def sim():
    with SimServer(latency_s=0.01) as url:
        yield f"openai/sim@{url}"


@pytest.fixture(scope="module")
def server(sim, tmp_path_factory):
    runs = tmp_path_factory.mktemp("studio-harness")
    log = runs / "server.log"
    with dev_server(log, {RUNS_ENV: str(runs), MODEL_ENV: sim}, jobs=2) as url:
        yield url, log


def test_seed_harnesses_list_their_own_nodes_and_stream_them(server, sim) -> None:
    from langgraph_sdk import get_client

    url, log = server

    async def go():
        client = get_client(url=url)
        by_graph = {a["graph_id"]: a["assistant_id"]
                    for a in await client.assistants.search(limit=50)}
        shapes = {name: await client.assistants.get_graph(by_graph[name])
                  for name in ("multihop_two_hop", "baseline_tool_loop", "reasoning_direct")}
        thread = await client.threads.create()
        events = [e async for e in client.runs.stream(
            thread["thread_id"], "baseline_tool_loop", input={"question": "What is 17 + 25?"},
            config={"configurable": {"model": sim}},
            stream_mode=["updates", "values", "messages-tuple"])]
        state = await client.threads.get_state(thread["thread_id"])
        return shapes, events, state["values"]

    shapes, events, values = asyncio.run(go())
    nodes = {name: [n["id"] for n in shape["nodes"]] for name, shape in shapes.items()}
    assert nodes["multihop_two_hop"] == ["__start__", "hop1", "hop2", "answer_from_notes",
                                         "__end__"], log.read_text()[-3000:]
    assert nodes["baseline_tool_loop"] == ["__start__", "start", "turn", "__end__"]
    assert nodes["reasoning_direct"] == ["__start__", "solve", "__end__"]
    edges = {(e["source"], e["target"]) for e in shapes["multihop_two_hop"]["edges"]}
    assert edges == {("__start__", "hop1"), ("hop1", "hop2"), ("hop2", "answer_from_notes"),
                     ("answer_from_notes", "__end__")}
    assert ALLOW_BLOCKING_WARNING not in log.read_text()  # the blocking-call detector was on
    errors = [e.data for e in events if e.event == "error"]
    assert not errors, f"{errors}\n{log.read_text()[-3000:]}"
    updates = [e.data for e in events if e.event == "updates"]
    assert [next(iter(u)) for u in updates] == ["start", "turn"]
    assert updates[0]["start"]["messages"][1]["content"] == "What is 17 + 25?"
    assert updates[1]["turn"]["finished"] is True and updates[1]["turn"]["answer"] == "42"
    snapshots = [e.data for e in events if e.event == "values"]
    assert [s.get("turns") for s in snapshots] == [None, 0, 1]  # the state after each node
    assert values["answer"] == "42" and values["calls"][0]["tool"] == "llm"
    # The Solver's reply reaches the server's own callbacks: Studio's message view shows it
    (message, meta), = [e.data for e in events if e.event == "messages"]
    assert message["type"] == "ai" and message["content"] == "Answer: 42"
    assert meta["langgraph_node"] == "turn" and message["usage_metadata"]["output_tokens"] > 0
