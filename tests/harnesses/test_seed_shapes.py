"""The second reasoning seed (`reasoning_respond`) is the reasoning seed under other names: in the
sandbox it sends the Solver the same messages and returns the same answers, and the interpreter
operator wraps it and `inline_block` writes the loop into its own node, under its own names."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scripted_sums import ScriptedModel

from harness_learning.harnesses.compiler import check_source
from harness_learning.harnesses.edits.function_edit import node_functions
from harness_learning.harnesses.edits.inline import inline_block, inlined_function
from harness_learning.harnesses.edits.operators import BLOCKS_MODULE, OPERATORS, apply_operator
from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox

REPLIES = {"What is 2 + 2?": "Four, so\nAnswer: 4", "Name a prime.": "7 is prime"}


def reply(prompt: str, params: dict) -> str:
    return next(text for question, text in REPLIES.items() if prompt.endswith(question))


def answers_and_prompts(source: str) -> tuple[list[str | None], list[str]]:
    model = ScriptedModel(reply)

    async def main():
        async with Worker(Toolbox(solver=model)) as worker:
            await worker.load(source)
            return [await worker.run(f"p{i}", {"question": q}) for i, q in enumerate(REPLIES)]

    results = asyncio.run(main())
    assert all(r.error is None for r in results), [r.error for r in results]
    return [r.answer for r in results], model.calls


UNSEEN = (Path(__file__).resolve().parents[2] / "experiments" / "shapes"
          / "reasoning_unseen.py").read_text()


@pytest.mark.parametrize("name", ["reasoning_respond", "unseen"])
def test_the_other_shapes_behave_as_the_reasoning_seed(name):
    first = seed_source("reasoning_direct")
    second = UNSEEN if name == "unseen" else seed_source(name)
    assert node_functions(first) == ["solve"] and node_functions(second) in (["respond"],
                                                                          ["work_out"])
    assert "class State(" not in second and "def build_graph(tools)" not in second
    assert "PROMPT" not in second
    answers, prompts = answers_and_prompts(second)
    assert answers == ["4", "7 is prime"]
    assert (answers, prompts) == answers_and_prompts(first)


def test_the_interpreter_is_inlined_into_the_second_shape_under_its_names():
    wrapped = apply_operator(OPERATORS["interpreter"], seed_source("reasoning_respond"))
    new = inline_block(wrapped, "interpreter")
    check_source(new)
    assert BLOCKS_MODULE not in new
    parent, code = inlined_function(wrapped, "interpreter")
    assert parent == seed_source("reasoning_respond")
    assert code.count("def respond(s: Slate)") == 1 and "kit.python(" in code
    assert 's["question"]' in code and "kit.llm([*SHOWN, turn])" in code  # the old body stays
