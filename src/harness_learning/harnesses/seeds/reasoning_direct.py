"""Seed harness, reasoning track: one Solver call that answers directly. One worked example,
given as an earlier chat turn, shows the answer format (small models follow a format only when
shown it)."""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line
in the form "Answer: <answer>".

Problem: {question}"""

EXAMPLE = [{"role": "user", "content": PROMPT.format(question="How many legs do 2 cats have?")},
           {"role": "assistant", "content": "Answer: 8"}]


def build_graph(tools):
    def solve(state: State) -> dict:
        ask = {"role": "user", "content": PROMPT.format(question=state["question"])}
        reply = tools.llm([*EXAMPLE, ask])
        answer = reply.rsplit("Answer:", 1)[-1].strip() if "Answer:" in reply else reply.strip()
        return {"answer": answer}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
