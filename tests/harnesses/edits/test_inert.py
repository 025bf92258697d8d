"""An edit that changes nothing that runs (`inert_change`): only docstrings, or top-level
functions no code calls. Scope is read with `symtable`, so a nested `solve` the graph uses is
told apart from a dead top-level one of the same name."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.edits.normalise import inert_change
from harness_learning.harnesses.edits.operators import OPERATORS, apply_operator
from harness_learning.harnesses.seeds import seed_source

SEED = seed_source("reasoning_direct")
DEAD_SOLVE = '\n\ndef solve(state):\n    return {"answer": "589"}\n'


def test_a_dead_top_level_twin_of_the_nested_solve_is_inert():
    why = inert_change(SEED, SEED + DEAD_SOLVE)
    assert why is not None and "'solve', which nothing calls" in why


def test_a_docstring_only_edit_is_inert_and_a_prompt_edit_is_not():
    assert "docstrings" in inert_change(SEED, SEED.replace("Seed harness", "A seed harness", 1))
    assert inert_change(SEED, SEED.replace("Think briefly", "Think step by step")) is None


def test_a_new_helper_the_graph_calls_is_not_inert():
    called = SEED.replace("reply = tools.llm([*EXAMPLE, ask])",
                          "reply = ask_solver(tools, ask)") + (
        "\n\ndef ask_solver(tools, ask):\n    return tools.llm([*EXAMPLE, ask])\n")
    assert inert_change(SEED, called) is None


def test_a_block_wrapped_seed_keeps_its_inner_builder_alive():
    wrapped = apply_operator(OPERATORS["interpreter"], SEED)
    assert inert_change(SEED, wrapped) is None
    assert "'solve'" in inert_change(wrapped, wrapped + DEAD_SOLVE)


@pytest.mark.parametrize("twist", [
    lambda s: s + DEAD_SOLVE.replace("def solve", "@register\ndef solve"),  # may register itself
    lambda s: s + DEAD_SOLVE + "\nHANDLERS = globals()\n",  # reachable without its name
    lambda s: s + DEAD_SOLVE.replace("def solve", "def build_graph2") + "\nbuild_graph = build_graph2\n",
    lambda s: s + "\ndef (:\n",  # does not parse: the compiler's check says why
])
def test_what_might_run_or_cannot_be_read_is_never_called_inert(twist):
    assert inert_change(SEED, twist(SEED)) is None


@pytest.mark.parametrize("terms", [1_000, 100_000])
def test_a_tree_too_deep_to_walk_is_judged_by_the_compiler_not_raised(terms):
    """`X = 1+1+...` from a Proposer caught in a loop: too deep for `ast.dump` (1,000 terms) or
    for the parser (100,000). The judge's own checks must not raise on it, and the compiler's
    refuses it (`MAX_DEPTH`), so no such tree becomes a version."""
    from harness_learning.evals.judge import check_candidate
    from harness_learning.harnesses.edits.normalise import normalised_sha

    deep = SEED + "\nX = 1" + "+1" * terms + "\n"
    assert inert_change(SEED, deep) is None and len(normalised_sha(deep)) == 64
    outcome = check_candidate(SEED, f"```python\n{deep}```\n", "whole_program", "stop",
                              track="reasoning", line_limit=400)
    assert outcome.invalid_kind == "syntax" and "deep" in outcome.invalid_reason
