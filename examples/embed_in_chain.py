"""Embed an evolved harness in an existing LangChain app.

    python examples/embed_in_chain.py --model local                 # demo run's version, or a seed
    python examples/embed_in_chain.py --model local --harness runs/my-run

1. LCEL: `prompt | to_question | harness | answer_text | IntegerParser()`: the harness is one
   more Runnable in the chain (invoke, batch and stream all work).
2. Subgraph: the same compiled harness as a node of the app's own LangGraph graph.

The harness runs in a sandbox worker (it may have been written by a model); only the
Solver calls come back to this process.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from harness_learning.graphs.serving.embed import load_harness, resolve_harness

DEMO_RUN = Path("runs/demo")
SUMS = [{"a": 3, "b": 4}, {"a": 12, "b": 30}, {"a": 7, "b": 8}]


class IntegerParser(BaseOutputParser[int | None]):
    """The app's own parser: the last integer in the answer text (None if there is none)."""

    def parse(self, text: str) -> int | None:
        numbers = re.findall(r"-?\d+", text)
        return int(numbers[-1]) if numbers else None


class AppState(TypedDict, total=False):
    question: str
    answer: str
    checked: str


def pick_harness(given: str | None) -> str:
    if given:
        return given
    return str(DEMO_RUN) if (DEMO_RUN / "config.json").exists() else "reasoning_direct"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local", help="Solver: 'local' or a litellm model spec")
    parser.add_argument("--harness", help="seed name, harness file or run directory "
                        "(default: runs/demo if it exists, else the reasoning seed)")
    args = parser.parse_args()

    ref = pick_harness(args.harness)
    harness = load_harness(ref, model=args.model, solver_params={"max_tokens": 96})
    print(f"harness: {resolve_harness(ref).origin}; Solver: {args.model}; sandboxed")

    prompt = PromptTemplate.from_template("What is {a} + {b}? Reply with the number.")
    to_question = RunnableLambda(lambda value: {"question": value.to_string()})
    answer_text = RunnableLambda(lambda out: out["answer"])
    chain = prompt | to_question | harness | answer_text | IntegerParser()

    t0 = time.perf_counter()
    results = chain.batch(SUMS)
    for sums, got in zip(SUMS, results, strict=True):
        truth = sums["a"] + sums["b"]
        print(f"LCEL  {sums['a']} + {sums['b']} -> {got!r:6} ({'right' if got == truth else 'wrong'})")
    print(f"LCEL  batch of {len(SUMS)} in {time.perf_counter() - t0:.2f} s")

    def check(state: AppState) -> dict:
        value = IntegerParser().parse(state.get("answer", ""))
        return {"checked": f"parsed {value!r} from {state.get('answer', '')!r:.60}"}

    app = StateGraph(AppState)
    app.add_node("solve", harness)  # the compiled harness graph as a subgraph
    app.add_node("check", check)
    app.add_edge(START, "solve")
    app.add_edge("solve", "check")
    app.add_edge("check", END)
    out = app.compile().invoke({"question": "What is 20 + 22? Reply with the number."})
    print(f"graph answer={out['answer']!r:.60} checked={out['checked']}")
    harness.harness_runner.close()


if __name__ == "__main__":
    main()
