"""The served harness graph mirrors the harness's own topology while its code runs in the
sandbox: nodes and edges, state streamed node by node (checked against the same harness run in
process), the caller's RunnableConfig (callbacks, tags, metadata, recursion limit), its public
inputs, and `as_tool`'s content and artifact. The Solver is a simulated OpenAI server (real HTTP,
real litellm); the real local model is the slow test at the end."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphRecursionError

from harness_learning.graphs.serving.embed import HarnessInputError, HarnessRunError, load_harness
from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.sandbox import Worker

pytestmark = pytest.mark.timeout(180)

SHAPES = '''
import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    hint: str
    notes: Annotated[list, operator.add]
    rounds: int
    answer: str


def build_graph(tools):
    def left(state):
        return {"notes": ["left"]}

    def right(state):
        out = tools.python("print(6 * 7)")
        return {"notes": [f"right {state.get('hint', '-')} {out.stdout.strip()}"]}

    def think(state):
        return {"rounds": state.get("rounds", 0) + 1, "notes": [tools.llm(state["question"])]}

    def again(state):
        return "think" if state["rounds"] < 2 else "decide"

    def decide(state):
        return Command(update={"notes": ["decided"]}, goto="write")

    def write(state):
        return {"answer": " | ".join(state["notes"])}

    graph = StateGraph(State)
    for name, node in (("left", left), ("right", right), ("think", think), ("write", write)):
        graph.add_node(name, node)
    graph.add_node("decide", decide, destinations=("write",))
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge(["left", "right"], "think")
    graph.add_conditional_edges("think", again, ["think", "decide"])
    graph.add_edge("write", END)
    return graph
'''
LOOP = '''
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    n: int
    answer: str


def build_graph(tools):
    graph = StateGraph(State)
    graph.add_node("spin", lambda state: {"n": state.get("n", 0) + 1})
    graph.add_edge(START, "spin")
    graph.add_conditional_edges("spin", lambda state: "spin")
    return graph
'''
NESTED = '''
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    inner = StateGraph(State)
    inner.add_node("agent", lambda state: {"answer": tools.llm(state["question"])})
    inner.add_edge(START, "agent")
    graph = StateGraph(State)
    graph.add_node("pre", lambda state: {"question": state["question"].strip()})
    graph.add_node("agent", inner.compile())
    graph.add_edge(START, "pre")
    graph.add_edge("pre", "agent")
    return graph
'''
HARNESS_KEYS = ("question", "hint", "notes", "rounds", "answer")


class Recorder(BaseCallbackHandler):
    """Every chain, chat-model and tool event, in order, with its ids, tags and metadata."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def _add(self, kind: str, **data: Any) -> None:
        self.events.append({"kind": kind, **data})

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw) -> None:
        self._add("chain", name=kw.get("name"), run_id=run_id, parent=parent_run_id)

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None,
                            tags=None, metadata=None, **kw) -> None:
        self._add("chat", run_id=run_id, parent=parent_run_id, tags=tags or [],
                  metadata=metadata or {}, messages=messages)

    def on_llm_end(self, response, *, run_id, **kw) -> None:
        self._add("llm_end", run_id=run_id, text=response.generations[0][0].text,
                  usage=(response.llm_output or {}).get("token_usage"))

    def on_tool_start(self, serialized, input_str, *, run_id, parent_run_id=None, **kw) -> None:
        self._add("tool", name=serialized.get("name"), parent=parent_run_id, input=input_str)

    def on_tool_end(self, output, *, run_id, **kw) -> None:
        self._add("tool_end", output=output)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]


@pytest.fixture(scope="module")
def sim():
    with SimServer(latency_s=0.01) as url:
        yield f"openai/sim@{url}"


@pytest.fixture(scope="module")
def shapes(tmp_path_factory, sim):
    path = tmp_path_factory.mktemp("shapes") / "shapes.py"
    path.write_text(SHAPES)
    graph = load_harness(path, model=sim)
    yield graph, path
    graph.harness_runner.close()


def test_the_served_graph_has_the_harness_topology(shapes, sim) -> None:
    graph, path = shapes
    reviewed = load_harness(path, model=sim, sandboxed=False, reviewed=True)
    mine, theirs = graph.get_graph(), reviewed.get_graph()
    assert set(mine.nodes) == set(theirs.nodes) == {
        "__start__", "left", "right", "think", "decide", "write", "__end__"}
    edges = {(e.source, e.target, e.conditional) for e in mine.edges}
    assert edges == {(e.source, e.target, e.conditional) for e in theirs.edges}
    assert ("think", "decide", True) in edges and ("decide", "write", True) in edges


def test_state_streams_node_by_node_as_the_harness_runs(shapes, sim) -> None:
    """The same steps and the same state after each as the harness run in process."""
    graph, path = shapes
    reviewed = load_harness(path, model=sim, sandboxed=False, reviewed=True)
    given = {"question": "What is 20 + 22?", "hint": "h1"}

    def steps(g):
        """Per step: the nodes that ran (in any order) and the state after them."""
        out, ran = [], []
        for mode, data in g.stream(given, stream_mode=["updates", "values"]):
            if mode == "updates":
                ran += list(data)
            else:
                out.append((sorted(ran), {k: data.get(k) for k in HARNESS_KEYS}))
                ran = []
        return out

    served, in_process = steps(graph), steps(reviewed)
    # The input as given; then, after each step, the same nodes and the same state
    assert served[0] == ([], {**dict.fromkeys(HARNESS_KEYS), **given})
    assert served[1:] == in_process[1:]
    assert [nodes for nodes, _ in served] == [
        [], ["left", "right"], ["think"], ["think"], ["decide"], ["write"]]
    final = served[-1][1]
    assert final["answer"] == "left | right h1 42 | Answer: 42 | Answer: 42 | decided"
    out = graph.invoke(given)
    assert out["answer"] == final["answer"] and [c["tool"] for c in out["calls"]] == [
        "python", "llm", "llm"]


def test_callbacks_tags_and_metadata_reach_the_harness_calls(shapes) -> None:
    graph, _ = shapes
    recorder = Recorder()
    out = asyncio.run(graph.ainvoke({"question": "What is 2 + 3?"}, {
        "callbacks": [recorder], "tags": ["from-test"], "metadata": {"who": "test"}}))
    assert out["answer"].endswith("Answer: 5 | Answer: 5 | decided")
    node_runs = {e["run_id"]: e["name"] for e in recorder.of("chain")}
    chats = recorder.of("chat")
    assert len(chats) == 2 and all(node_runs[c["parent"]] == "think" for c in chats)
    assert all("from-test" in c["tags"] and c["metadata"]["who"] == "test" for c in chats)
    assert chats[0]["messages"][0][0].content == "What is 2 + 3?"
    ends = recorder.of("llm_end")
    assert [e["text"] for e in ends] == ["Answer: 5", "Answer: 5"]
    assert all(e["usage"]["completion_tokens"] > 0 for e in ends)
    (tool,) = recorder.of("tool")
    assert tool["name"] == "python" and node_runs[tool["parent"]] == "right"
    assert "print(6 * 7)" in tool["input"]
    assert recorder.of("tool_end")[0]["output"]["stdout"].strip() == "42"


def test_calls_inside_a_subgraph_nest_under_its_node(tmp_path, sim) -> None:
    """The inner node counts its own steps (1, not the outer 2): the call still finds the
    mirror node that runs it, and nothing waits for a step that never comes."""
    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    graph = load_harness(path, model=sim)
    recorder = Recorder()
    try:
        out = graph.invoke({"question": " What is 4 + 4? "}, {"callbacks": [recorder]})
    finally:
        graph.harness_runner.close()
    assert out["answer"] == "Answer: 8"
    node_runs = {e["run_id"]: e["name"] for e in recorder.of("chain")}
    (chat,) = recorder.of("chat")
    assert node_runs[chat["parent"]] == "agent"


def test_a_stream_left_early_stops_the_sandbox_run(shapes) -> None:
    graph, _ = shapes
    for _chunk in graph.stream({"question": "What is 1 + 2?"}, stream_mode="updates"):
        break  # the caller stops reading after the first node
    assert graph.invoke({"question": "What is 2 + 2?"})["answer"].endswith("Answer: 4 | decided")


def test_inputs_are_checked_and_all_declared_fields_reach_the_sandbox(shapes) -> None:
    graph, _ = shapes
    schema = graph.get_input_jsonschema()
    assert schema["required"] == ["question"]
    assert {"question", "hint", "notes", "rounds"} == set(schema["properties"])
    with pytest.raises(HarnessInputError, match="needs `question`.*got keys: \\['hint'\\]"):
        graph.invoke({"hint": "no question"})
    with pytest.raises(HarnessInputError, match="`hint` must be a JSON string, got int"):
        graph.invoke({"question": "What is 1 + 1?", "hint": 3})
    # a parent graph's other keys are left out; a declared field reaches the harness
    out = graph.invoke({"question": "What is 1 + 1?", "hint": "h2", "unrelated": object()})
    assert "right h2 42" in out["answer"]


def test_recursion_limit_is_enforced_inside_the_sandbox(tmp_path, sim) -> None:
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    graph = load_harness(path, model=sim)
    try:
        with pytest.raises((GraphRecursionError, HarnessRunError)):
            graph.invoke({"question": "spin"}, {"recursion_limit": 4})
    finally:
        graph.harness_runner.close()

    class Observer:
        config = {"recursion_limit": 3}
        steps: list[int] = []

        def step(self, message):
            self.steps.append(message["step"])

        def tool_call(self, tool, args, node, call):
            return call

    async def direct():
        async with Worker() as worker:
            await worker.load(LOOP)
            return await worker.run("p1", {"question": "spin"}, 30, observer=Observer())

    outcome = asyncio.run(direct())
    assert outcome.answer is None and "Recursion limit of 3" in outcome.error
    assert Observer.steps == [0, 1, 2, 3]  # the input, then three steps: it stopped itself


def test_as_tool_gives_the_answer_as_content_and_the_trace_as_artifact(shapes) -> None:
    graph, _ = shapes
    tool = graph.as_tool(name="think", description="Think about a question.")
    assert tool.response_format == "content_and_artifact"
    message = tool.invoke({"type": "tool_call", "id": "t1", "name": "think",
                           "args": {"question": "What is 3 + 3?", "hint": "h3"}})
    assert message.content.endswith("Answer: 6 | decided")
    assert [c["tool"] for c in message.artifact["calls"]] == ["python", "llm", "llm"]


@pytest.mark.slow
def test_local_model_llm_events_reach_a_callback_handler(local_model_url) -> None:
    """`load_harness(...).invoke(..., config)` with the real local Solver (SmolLM2)."""
    graph = load_harness("reasoning_direct", model="local", solver_params={"max_tokens": 24})
    recorder = Recorder()
    try:
        out = graph.invoke({"question": "What is 2 + 3?"},
                           {"callbacks": [recorder], "tags": ["local"]})
    finally:
        graph.harness_runner.close()
    node_runs = {e["run_id"]: e["name"] for e in recorder.of("chain")}
    (chat,) = recorder.of("chat")
    (end,) = recorder.of("llm_end")
    assert node_runs[chat["parent"]] == "solve" and "local" in chat["tags"]
    assert "What is 2 + 3?" in chat["messages"][0][-1].content
    assert end["run_id"] == chat["run_id"] and end["usage"]["completion_tokens"] > 0
    (call,) = out["calls"]
    assert call["result"] == end["text"]  # the handler saw the Solver's own reply
