"""A harness over the MCP server's `add`: the Solver restates the question (its reply is
kept, not trusted), `tools.add` sums the terms, and the LangChain form of the same tool
(`tools.langchain_tools()`) checks the sum."""

import re

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    note: str
    total: int
    answer: str


def build_graph(tools):
    def restate(state: State) -> dict:
        return {"note": tools.llm(f"Restate briefly: {state['question']}", max_tokens=12)}

    def add(state: State) -> dict:
        a, b = map(int, re.findall(r"\d+", state["question"])[:2])
        return {"total": tools.add(a=a, b=b)}

    def check(state: State) -> dict:
        (tool,) = [t for t in tools.langchain_tools() if t.name == "add"]
        a, b = map(int, re.findall(r"\d+", state["question"])[:2])
        again = int(tool.invoke({"a": a, "b": b}))
        return {"answer": str(state["total"]) if again == state["total"] else "mismatch"}

    graph = StateGraph(State)
    for name, fn in (("restate", restate), ("add", add), ("check", check)):
        graph.add_node(name, fn)
    graph.add_edge(START, "restate")
    graph.add_edge("restate", "add")
    graph.add_edge("add", "check")
    graph.add_edge("check", END)
    return graph
