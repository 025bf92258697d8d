"""Operators apply a building block by rewriting a harness's source from its syntax tree: every
block fits every harness of the right shape, whatever its nodes and variables are called, and
the result compiles in the real sandbox with the block's nodes in its graph."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from renamed_qa import RENAMED_TWO_HOP

from harness_learning.harnesses.compiler import check_source
from harness_learning.harnesses.edits.operators import (
    OPERATORS,
    Operator,
    OperatorError,
    apply_operator,
    fitting,
    misfit,
    register_operator,
    resolve_operators,
)
from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.seeds import seed_source

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "your_own_agent"

RENAMED = '''"""A harness whose names share nothing with the seeds: t for tools, other nodes and keys."""
from langgraph.graph import StateGraph, START, END
from typing_extensions import TypedDict


class Box(TypedDict, total=False):
    question: str
    found: str
    answer: str


def build_graph(t):
    def look(box: Box) -> dict:
        hits = t.search(box["question"], 3)
        return {"found": " ".join(h.text for h in hits)}

    def reply(box: Box) -> dict:
        return {"answer": t.llm("Facts: " + box["found"] + "\\nQ: " + box["question"]).strip()}

    g = StateGraph(Box)
    g.add_node("look", look)
    g.add_node("reply", reply)
    g.add_edge(START, "look")
    g.add_edge("look", "reply")
    g.add_edge("reply", END)
    return g
'''

HARNESSES = {
    "reasoning_direct": seed_source("reasoning_direct"),
    "multihop_two_hop": seed_source("multihop_two_hop"),
    "baseline_tool_loop": seed_source("baseline_tool_loop"),
    "your_own_agent": (EXAMPLES / "shop_harness.py").read_text(encoding="utf-8"),
    "your_own_react_agent": (EXAMPLES / "react_agent.py").read_text(encoding="utf-8"),
    "renamed": RENAMED,
    "renamed_two_hop": RENAMED_TWO_HOP,
}
SEARCHING = {"multihop_two_hop", "renamed", "renamed_two_hop"}
BLOCK_NODES = {"interpreter": {"write_and_run", "fallback"}, "vote": {"sample", "vote"},
               "verify": {"solve", "check"}, "plan": {"plan", "solve_with_plan"},
               "check": {"draft", "check_draft"}, "few_shot": {"solve_with_examples"}}
# passages and short_answer compile and run in the sandbox, on the QA seed and on the renamed
# two-hop harness, in tests/harnesses/blocks/test_blocks.py.
RETRIEVAL = sorted(name for name, op in OPERATORS.items() if "search" in op.needs)
DEMOS = (("What is 12 * 3?", "36"), ('A "quoted"\nquestion?', "it's"))


def demos_for(name: str) -> tuple[tuple[str, str], ...]:
    return DEMOS if OPERATORS[name].demonstrations else ()


def cases() -> list[tuple[str, str]]:
    return [(h, op) for h in HARNESSES for op in OPERATORS
            if not OPERATORS[op].needs or h in SEARCHING]


@pytest.mark.parametrize(("harness", "name"), cases())
def test_every_block_applies_to_every_harness_of_its_shape(harness: str, name: str) -> None:
    source = HARNESSES[harness]
    new = apply_operator(OPERATORS[name], source, demos_for(name))
    check_source(new)
    assert f"import {OPERATORS[name].block}" in new and new != source
    assert misfit(OPERATORS[name], new, demos_for(name)) == \
        f"the harness already uses {OPERATORS[name].block}"


def test_few_shot_writes_its_demonstrations_and_needs_some() -> None:
    source = HARNESSES["renamed"]
    with pytest.raises(OperatorError, match="needs demonstrations.*held-out split"):
        apply_operator(OPERATORS["few_shot"], source)
    assert "few_shot" not in [op.name for op in fitting(list(OPERATORS.values()), source)]
    new = apply_operator(OPERATORS["few_shot"], source, DEMOS)
    declared = new.split("DEMONSTRATIONS = ", 1)[1].split("\n]", 1)[0] + "\n]"
    assert [tuple(p) for p in ast.literal_eval(declared)] == list(DEMOS)  # read back as written
    assert "return with_demonstrations(tools, build_graph_before_few_shot, DEMONSTRATIONS)" in new


@pytest.mark.parametrize("harness", sorted(set(HARNESSES) - SEARCHING))
def test_retrieval_blocks_do_not_fit_a_harness_that_never_searches(harness: str) -> None:
    assert {"rewrite_query", "extra_hop", "check", "passages", "short_answer"} <= set(RETRIEVAL)
    for name in RETRIEVAL:
        with pytest.raises(OperatorError, match=f"operator '{name}' does not fit this harness: "
                                                "the harness never calls tools.search"):
            apply_operator(OPERATORS[name], HARNESSES[harness])
    fit = {op.name for op in fitting(list(OPERATORS.values()), HARNESSES[harness])}
    assert not fit & set(RETRIEVAL)


def test_passages_and_short_answer_wrap_the_qa_seed_and_stack() -> None:
    seed = HARNESSES["multihop_two_hop"]
    both = apply_operator(OPERATORS["short_answer"], apply_operator(OPERATORS["passages"], seed))
    check_source(both)
    assert "from harness_learning.harnesses.blocks import with_answer_from_passages" in both
    assert "return with_answer_from_passages(tools, build_graph_before_passages)" in both
    assert "return with_short_answer(tools, build_graph_before_short_answer)" in both
    assert both.count("def build_graph(tools):") == 1
    renamed = apply_operator(OPERATORS["passages"], HARNESSES["renamed"])
    assert "def build_graph_before_passages(t):" in renamed  # its own name for the tools kept
    two_hop = apply_operator(OPERATORS["passages"], HARNESSES["renamed_two_hop"])
    assert "def build_graph_before_passages(kit):" in two_hop


def test_blocks_stack_and_each_wrapped_builder_keeps_its_own_name() -> None:
    once = apply_operator(OPERATORS["interpreter"], HARNESSES["renamed"])
    twice = apply_operator(OPERATORS["vote"], once)
    check_source(twice)
    assert "def build_graph_before_interpreter(t):" in twice
    assert "return with_vote(tools, build_graph_before_vote)" in twice
    assert twice.count("def build_graph(tools):") == 1


def test_bad_specs_and_sources_get_one_line_errors() -> None:
    with pytest.raises(OperatorError, match="unknown operator.*nope.*known: interpreter"):
        resolve_operators("interpreter,nope")
    assert resolve_operators("none") == [] and len(resolve_operators("auto")) == len(OPERATORS)
    with pytest.raises(OperatorError, match="does not parse"):
        apply_operator(OPERATORS["vote"], "def build_graph(:\n")
    with pytest.raises(OperatorError, match="no module-level `def build_graph"):
        apply_operator(OPERATORS["vote"], "x = 1\n")


@pytest.mark.parametrize("returned", ["create_react_agent(model=m, tools=[])", "g.compile()"])
def test_a_builder_returning_a_compiled_graph_says_why_operators_do_not_fit(returned) -> None:
    """A user's agent returned as it is cannot be wrapped by a block (blocks wrap the StateGraph
    before it is compiled); the reason names the call, and Proposer edits remain."""
    source = ("from langgraph.prebuilt import create_react_agent\n\n\ndef build_graph(tools):\n"
              "    def inner():\n        return 1\n    m = tools.chat_model()\n"
              f"    return {returned}\n")
    name = returned.split("(")[0].split(".")[-1]
    with pytest.raises(OperatorError, match=rf"build_graph returns a compiled graph \({name}"
                                            r"\(\.\.\.\)\).*Proposer edits still apply"):
        apply_operator(OPERATORS["vote"], source)
    assert apply_operator(OPERATORS["vote"], seed_source("reasoning_direct"))  # a StateGraph


def test_a_user_registers_an_operator_of_their_own() -> None:
    mine = Operator("shout", "", "answers in capitals",
                    transform=lambda s: s.replace('{"answer": answer}', '{"answer": answer.upper()}'))
    register_operator(mine)
    try:
        assert resolve_operators("shout") == [mine]
        new = apply_operator(mine, HARNESSES["reasoning_direct"])
        assert "answer.upper()" in new
        with pytest.raises(OperatorError, match="already registered"):
            register_operator(Operator("shout", "", "another"))
    finally:
        OPERATORS.pop("shout")


@pytest.mark.slow
def test_operator_candidates_compile_in_the_sandbox_with_the_blocks_nodes() -> None:
    async def shape(source: str) -> set[str]:
        async with Worker() as worker:
            await worker.load(source)
            return {n["name"] for n in worker.shape["nodes"]}

    async def main() -> None:
        for harness in ("reasoning_direct", "renamed", "your_own_agent"):
            for name, nodes in BLOCK_NODES.items():
                if OPERATORS[name].needs and harness not in SEARCHING:
                    continue
                got = await shape(apply_operator(OPERATORS[name], HARNESSES[harness],
                                                 demos_for(name)))
                assert nodes <= got, (harness, name, got)

    asyncio.run(main())
