"""The user's tools and the Solver as a LangChain chat model, through a real sandbox worker:
`tools.call`, `tools.<name>`, `tools.langchain_tools()`, `tools.chat_model()` with tool calls,
and a `create_react_agent` graph as the harness. The Solver is scripted here (control flow);
`test_react_agent_with_the_real_local_model` runs the example agent against SmolLM2."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning.harnesses.usertools import build_user_tools

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "your_own_agent"

HARNESS = '''
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class S(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    def solve(state):
        a = tools.call("add", a=2, b=3)
        b = tools.add(a=a, b=1)
        c = tools.langchain_tools()[0].invoke({"a": 1, "b": 1})
        errors = []
        for bad in (lambda: tools.add(a="two", b=1), lambda: tools.subtract(a=1, b=1)):
            try:
                bad()
            except Exception as exc:
                errors.append(type(exc).__name__ + ": " + str(exc))
        return {"answer": repr([a, b, c, errors])}
    g = StateGraph(S)
    g.add_node("solve", solve)
    g.add_edge(START, "solve")
    g.add_edge("solve", END)
    return g
'''


def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


class Scripted:
    """A Solver by rule (control flow only): call `add` once, then answer with its result."""

    def __init__(self) -> None:
        self.prompts: list = []

    async def acomplete(self, messages, **params):
        self.prompts.append(messages)
        last = messages[-1]["content"]
        if last.startswith("Result of tool add"):
            return f"The answer is {last.rsplit(':', 1)[1].strip()}"
        return '<tool_call>{"name": "add", "arguments": {"a": 20, "b": 22}}</tool_call>'


def run_one(toolbox, source: str, inputs: dict):
    async def go():
        async with Worker(toolbox) as worker:
            await worker.load(source)
            return await worker.run("p1", inputs, 60)
    return asyncio.run(go())


def test_harness_calls_user_tools_and_wrong_calls_are_its_fault():
    toolbox = Toolbox(user_tools=build_user_tools([add]))
    outcome = run_one(toolbox, HARNESS, {"question": "q"})
    assert outcome.error is None, outcome.traceback
    a, b, c, errors = eval(outcome.answer)  # the harness's own repr of plain values
    assert (a, b, c) == (5, 6, "2")
    assert errors[0].startswith("ToolError: ToolInputError: tools.call('add'): a: Input should "
                                "be a valid integer") and '"required": ["a", "b"]' in errors[0]
    assert "no tool 'subtract'; available: add" in errors[1]
    traced = [(c.tool, c.args.get("name"), c.error is None) for c in outcome.calls]
    assert traced == [("tool", "add", True), ("tool", "add", True), ("tool", "add", True),
                      ("tool", "add", False), ("tool", "subtract", False)]


def test_a_react_agent_harness_calls_the_tool_through_the_chat_model():
    solver = Scripted()
    toolbox = Toolbox(solver=solver, user_tools=build_user_tools([add]))
    source = (EXAMPLE / "react_agent.py").read_text()
    outcome = run_one(toolbox, source, {"question": "What is 20 + 22?", "shop": "north"})
    assert outcome.error is None, outcome.traceback
    assert outcome.answer == "The answer is 42"
    assert [c.tool for c in outcome.calls] == ["chat", "tool", "chat"]
    assert outcome.calls[1].args == {"name": "add", "args": {"a": 20, "b": 22}}
    offered = solver.prompts[0][0]["content"]  # the tools are offered in a system message
    assert offered.startswith("You can call these tools:") and "- add: The sum of two" in offered


@pytest.mark.slow
def test_react_agent_with_the_real_local_model(local_model_url):
    import sys

    from harness_learning.harnesses.llm import get_client

    sys.path.insert(0, str(EXAMPLE))
    try:
        from shop_tools import unit_price
    finally:
        sys.path.remove(str(EXAMPLE))
    toolbox = Toolbox(solver=get_client("local"), user_tools=build_user_tools([unit_price]),
                      solver_params={"temperature": 0.0, "max_tokens": 96})
    outcome = run_one(toolbox, (EXAMPLE / "react_agent.py").read_text(),
                      {"question": "How much do 3 apples cost, in euros?", "shop": "north"})
    assert outcome.error is None, outcome.traceback
    assert isinstance(outcome.answer, str) and outcome.calls[0].tool == "chat"
    first = outcome.calls[0]
    assert first.args["tools"][0]["function"]["name"] == "unit_price"
    assert set(first.result) == {"content", "tool_calls"}
    for call in outcome.calls:  # every tool call the model made was served in the parent
        if call.tool == "tool":
            assert call.args["name"] == "unit_price"
            assert call.error is not None or json.dumps(call.result)
