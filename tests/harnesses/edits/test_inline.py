"""`inline_block` writes an operator's strategy into the harness's own node: the result compiles
through the harness compiler, imports nothing from the blocks package, asks the Solver what the
block asks, and in the real sandbox with the real local Solver runs the Solver's code."""

from __future__ import annotations

import ast
import asyncio

import pytest

from harness_learning.harnesses.blocks.reasoning import FIX_PROGRAM, WRITE_PROGRAM
from harness_learning.harnesses.compiler import check_source
from harness_learning.harnesses.edits.function_edit import apply_function
from harness_learning.harnesses.edits.inline import inline_block, inlined_function, unwrap
from harness_learning.harnesses.edits.operators import (
    BLOCKS_MODULE,
    OPERATORS,
    OperatorError,
    apply_operator,
)
from harness_learning.harnesses.llm import get_client
from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox

RENAMED = '''from langgraph.graph import StateGraph, START, END
from typing_extensions import TypedDict


class Box(TypedDict, total=False):
    question: str
    draft: str
    answer: str


def build_graph(t):
    def think(box: Box) -> dict:
        return {"draft": t.llm("Think about: " + box["question"])}

    def reply(box: Box) -> dict:
        """The final answer."""
        return {"answer": t.llm(box["draft"] + "\\nAnswer only:").strip()}

    g = StateGraph(Box)
    g.add_node("think", think)
    g.add_node("reply", reply)
    g.add_edge(START, "think")
    g.add_edge("think", "reply")
    g.add_edge("reply", END)
    return g
'''
SEED = seed_source("reasoning_direct")


def wrapped(source: str) -> str:
    return apply_operator(OPERATORS["interpreter"], source)


def imported_modules(source: str) -> set[str]:
    return {n.module or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}


@pytest.mark.parametrize("source", [SEED, RENAMED], ids=["seed", "renamed"])
def test_the_inlined_harness_writes_the_loop_itself(source):
    new = inline_block(wrapped(source), "interpreter")
    check_source(new)
    assert BLOCKS_MODULE not in new and not any(m.startswith(BLOCKS_MODULE)
                                                for m in imported_modules(new))
    assert unwrap(wrapped(source), "interpreter") == source
    parent, code = inlined_function(wrapped(source), "interpreter")
    assert parent == source and apply_function(source, code) == new  # a focused edit of it
    assert WRITE_PROGRAM in ast.literal_eval(new.split("WRITE_PROGRAM = ", 1)[1].split("\n")[0])
    assert repr(FIX_PROGRAM) in new and "range(3)" in new  # the block's prompts, 2 retries


def test_the_loop_goes_into_the_node_that_answers_under_its_own_names():
    _, code = inlined_function(wrapped(RENAMED), "interpreter")
    assert "def reply(box: Box)" in code and 't.python(' in code and 'box["question"]' in code
    assert code.index('"""The final answer."""') < code.index("messages = ")


def test_the_plan_is_inlined_where_one_node_reads_the_question():
    from harness_learning.harnesses.blocks.reasoning import PLAN_STEPS

    new = inline_block(apply_operator(OPERATORS["plan"], SEED), "plan")
    check_source(new)
    assert BLOCKS_MODULE not in new and repr(PLAN_STEPS) in new and "max_tokens=160" in new
    assert "Steps to follow:" in new
    with pytest.raises(OperatorError, match="one node reads the question"):
        inline_block(apply_operator(OPERATORS["plan"], RENAMED), "plan")


def test_a_source_without_the_operator_is_refused():
    with pytest.raises(OperatorError, match="not a harness with operator 'interpreter'"):
        inline_block(SEED, "interpreter")
    with pytest.raises(OperatorError, match="has no inliner"):
        inline_block(wrapped(SEED), "vote")


@pytest.mark.slow
def test_the_inlined_loop_runs_the_solvers_code_in_the_sandbox(local_model_url):
    new = inline_block(wrapped(SEED), "interpreter")
    toolbox = Toolbox(solver=get_client("local"), solver_params={"temperature": 0.0})

    async def main():
        async with Worker(toolbox) as worker:
            await worker.load(new)
            return await worker.run("p", {"question": "What is 17 * 23?"})

    result = asyncio.run(main())
    assert result.error is None, result.error
    tools = [c.tool for c in result.calls]
    assert tools[0] == "llm" and "python" in tools, tools
    first = result.calls[0]
    assert first.args["messages"][0]["content"] == WRITE_PROGRAM.format(question="What is 17 * 23?")
    ran = result.calls[tools.index("python")]
    assert ran.args["code"].strip() and ran.args["code"] in first.result  # the Solver's text
