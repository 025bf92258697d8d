"""A held-out harness shape for experiments/proposer_sft.toml: the reasoning seed's behaviour
(one Solver call, the same prompt, worked example and answer parsing) written in a way no
demonstration shows: node `work_out`, state `Pad`, `env` for the tools, the parsing in a
module-level helper. A student that learned the loop, not a spelling, writes it here too."""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Pad(TypedDict, total=False):
    question: str
    answer: str


ASK = """Solve the problem. Think briefly, then give the final answer on the last line
in the form "Answer: <answer>".

Problem: {question}"""

DEMO_TURNS = [{"role": "user", "content": ASK.format(question="How many legs do 2 cats have?")},
              {"role": "assistant", "content": "Answer: 8"}]


def last_answer(said: str) -> str:
    head, sep, tail = said.rpartition("Answer:")
    return tail.strip() if sep else said.strip()


def build_graph(env):
    def work_out(pad: Pad) -> dict:
        mine = {"role": "user", "content": ASK.format(question=pad["question"])}
        said = env.llm(DEMO_TURNS + [mine])
        return {"answer": last_answer(said)}

    plan = StateGraph(Pad)
    plan.add_node("work_out", work_out)
    plan.add_edge(START, "work_out")
    plan.add_edge("work_out", END)
    return plan
