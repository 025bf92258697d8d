"""Baseline (not a seed): a fixed, human-written Python tool loop of up to 5 Solver turns.

Each turn the Solver either writes a ```python block, which runs in the sandboxed interpreter
and whose output is shown back, or gives the final answer as "Answer: ...". Whether the loop
is finished is kept in the state (`finished`), never read back from the last message: the nudge
after a prose reply itself quotes "Answer: ...".
"""

import re

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

MAX_TURNS = 5
CODE = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)

SYSTEM = """You solve problems, using Python when it helps.
To run code, reply with one ```python block that prints what you need; you will see its output.
When you know the result, reply with "Answer: <answer>" on the last line."""


class State(TypedDict, total=False):
    question: str
    messages: list
    turns: int
    finished: bool
    answer: str


def build_graph(tools):
    def start(state: State) -> dict:
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": state["question"]}]
        return {"messages": messages, "turns": 0, "finished": False, "answer": ""}

    def turn(state: State) -> dict:
        messages = list(state["messages"])
        reply = tools.llm(messages)
        messages.append({"role": "assistant", "content": reply})
        turns = state["turns"] + 1
        if "Answer:" in reply:
            return {"messages": messages, "turns": turns, "finished": True,
                    "answer": reply.rsplit("Answer:", 1)[-1].strip()}
        code = CODE.search(reply)
        if code:
            result = tools.python(code.group(1), timeout=10)
            output = result.stdout if result.error is None else f"{result.stdout}\n{result.error}"
            messages.append({"role": "user", "content": f"Output:\n{output[-2000:]}"})
        else:
            messages.append({"role": "user", "content": "Run code or give 'Answer: ...'."})
        return {"messages": messages, "turns": turns, "answer": reply.strip()}

    def done(state: State) -> str:
        return END if state["finished"] or state["turns"] >= MAX_TURNS else "turn"

    graph = StateGraph(State)
    graph.add_node("start", start)
    graph.add_node("turn", turn)
    graph.add_edge(START, "start")
    graph.add_edge("start", "turn")
    graph.add_conditional_edges("turn", done)
    return graph
