"""Function edits (a focused edit): the new version of one function replaces its namesake where
it stands, nested node functions included; anything else is a named edit error."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.compiler import check_source
from harness_learning.harnesses.edits import parse_and_apply
from harness_learning.harnesses.edits.function_edit import (
    FOCUS_UNFIT,
    IMPORTS_PLACEHOLDER,
    focus_targets,
    node_functions,
)
from harness_learning.harnesses.edits.instructions import format_instructions
from harness_learning.harnesses.seeds import seed_source

SEED = seed_source("reasoning_direct")
NEW_SOLVE = '''I will use the interpreter.
```python
from harness_learning.harnesses.blocks import interpreter_loop

def solve(state: State) -> dict:
    run = interpreter_loop(tools, state["question"])
    return {"answer": run.answer or ""}
```
'''


def test_a_nested_node_function_is_replaced_in_place_and_its_imports_added() -> None:
    edit = parse_and_apply(SEED, NEW_SOLVE, "function")
    assert edit.failure is None and edit.applied
    new = edit.new_source
    check_source(new)
    assert "    def solve(state: State) -> dict:\n        run = interpreter_loop(" in new
    assert "from harness_learning.harnesses.blocks import interpreter_loop\n" in new
    assert new.count("def solve") == 1 and "tools.llm([*EXAMPLE, ask])" not in new
    assert new.index("import interpreter_loop") < new.index("class State")
    assert edit.edit.to_dict() == {"fmt": "function", "program": edit.edit.program}


@pytest.mark.parametrize(("completion", "kind", "detail"), [
    ("no code at all", "no_edit_found", "no ```python block"),
    ("```python\ndef solver(state):\n    return {}\n```", "unknown_function",
     "no function 'solver' (its functions: build_graph, solve)"),
    ("```python\ndef solve(state):\n    return {\n```", "malformed_block", "does not parse"),
    ("```python\n<its imports>\ndef solve(state):\n    return {}\n```", "malformed_block",
     "(line 1: '<its imports>')"),  # the line is quoted for the repair turn
    ("```python\nprint(1)\ndef solve(state):\n    return {}\n```", "malformed_block",
     "exactly one `def`"),
    ("```python\ndef solve(state):\n    return {}\ndef helper():\n    pass\n```",
     "malformed_block", "found 2 functions"),
    ("```python\ndef solve(state):\n    return {}\n", "malformed_block", "never closed"),
    # a lone surrogate (a JSON "\ud800" from a server) and a looping answer's 1+1+...+1
    ("```python\ndef solve(state):\n    return {'a': '\ud800'}\n```", "malformed_block",
     "surrogates not allowed"),
    ("```python\ndef solve(state):\n    return 1" + "+1" * 100_000 + "\n```", "malformed_block",
     "nested too deeply for the parser"),
])
def test_an_unusable_function_edit_names_why(completion: str, kind: str, detail: str) -> None:
    edit = parse_and_apply(SEED, completion, "function")
    assert edit.failure is not None and edit.failure.kind == kind
    assert detail in edit.failure.detail


def test_the_formats_imports_placeholder_copied_verbatim_is_dropped() -> None:
    copied = NEW_SOLVE.replace("```python\n", f"```python\n{IMPORTS_PLACEHOLDER}\n", 1)
    assert parse_and_apply(SEED, copied, "function").new_source == parse_and_apply(
        SEED, NEW_SOLVE, "function").new_source
    assert IMPORTS_PLACEHOLDER in format_instructions("function")  # the line the rule drops


def test_node_functions_are_read_from_the_graph_whatever_their_names() -> None:
    assert node_functions(SEED) == ["solve"]
    assert node_functions(seed_source("multihop_two_hop")) == ["hop1", "hop2", "answer"]
    assert node_functions(seed_source("baseline_tool_loop")) == ["start", "turn"]


COMPILED_ONLY = """from langgraph.prebuilt import create_react_agent


def get_weather(city: str) -> str:
    return f"It's always sunny in {city}!"


graph = create_react_agent(model=None, tools=[get_weather])
"""
MODULE_LEVEL_GRAPH = """from langgraph.graph import StateGraph


def solve(state):
    return {"answer": "4"}


builder = StateGraph(dict)
builder.add_node("solve", solve)
graph = builder.compile()
"""


def test_focused_edits_target_node_functions_or_the_builder_and_refuse_a_compiled_graph() -> None:
    """A module that is only a compiled `graph` has no function a focused edit could rewrite
    (asked for `build_graph`, a Proposer writes one the program lacks): one line says so and
    names the formats that fit. A module-level graph's node functions are still targets."""
    assert focus_targets(SEED) == ["solve"]
    returned = "def build_graph(tools):\n    return create_react_agent(model=m, tools=[])\n"
    assert focus_targets(returned) == ["build_graph"]
    assert focus_targets(MODULE_LEVEL_GRAPH) == ["solve"]
    with pytest.raises(ValueError, match="only a compiled `graph`") as refused:
        focus_targets(COMPILED_ONLY)
    assert str(refused.value) == FOCUS_UNFIT and "\n" not in FOCUS_UNFIT
    assert "--edit-format whole_program" in FOCUS_UNFIT


def test_a_constant_beside_the_function_replaces_its_namesake_or_is_added() -> None:
    completion = ('```python\nPROMPT = """Compute {question} exactly. End with "Answer: X"."""\n'
                  'TRIES = 2\n\ndef solve(state: State) -> dict:\n'
                  '    reply = tools.llm(PROMPT.format(question=state["question"]))\n'
                  '    return {"answer": reply.rsplit("Answer:", 1)[-1].strip()}\n```')
    new = parse_and_apply(SEED, completion, "function").new_source
    check_source(new)
    assert new.count("PROMPT = ") == 1 and 'PROMPT = """Compute {question} exactly.' in new
    assert new.index("TRIES = 2") < new.index("class State")
    assert "Solve the problem. Think briefly" not in new


def test_a_whole_program_in_a_function_edit_is_taken_as_the_program() -> None:
    program = SEED.replace("Think briefly", "Think step by step")
    edit = parse_and_apply(SEED, f"```python\n{program}```", "function")
    assert edit.applied and edit.new_source == program
