"""Seed harness, reasoning track, second shape: the reasoning seed's behaviour (one Solver
call, the same prompt, worked example and answer parsing) under other names: node `respond`,
state `Slate`, `kit` for the tools. Demonstrations collected on two shapes show a student
the strategy, not one harness's spelling of it."""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Slate(TypedDict, total=False):
    question: str
    answer: str


TEMPLATE = """Solve the problem. Think briefly, then give the final answer on the last line
in the form "Answer: <answer>".

Problem: {question}"""

SHOWN = [{"role": "user", "content": TEMPLATE.format(question="How many legs do 2 cats have?")},
         {"role": "assistant", "content": "Answer: 8"}]
MARK = "Answer:"


def build_graph(kit):
    def respond(s: Slate) -> dict:
        turn = {"role": "user", "content": TEMPLATE.format(question=s["question"])}
        text = kit.llm([*SHOWN, turn])
        final = text.rsplit(MARK, 1)[-1].strip() if MARK in text else text.strip()
        return {"answer": final}

    flow = StateGraph(Slate)
    flow.add_node("respond", respond)
    flow.add_edge(START, "respond")
    flow.add_edge("respond", END)
    return flow
