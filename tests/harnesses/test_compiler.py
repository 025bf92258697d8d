"""Runtime validation: each `HarnessInvalid` kind, from real sources."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from deep_stack import no_collection_at_depth

from harness_learning.harnesses import compiler
from harness_learning.harnesses.compiler import (
    HarnessInvalid,
    answer_of,
    check_source,
    compile_harness,
    count_lines,
)
from harness_learning.harnesses.seeds import SEEDS, seed_source

GOOD = """
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

class State(TypedDict, total=False):
    question: str
    answer: str

def build_graph(tools):
    def solve(state):
        return {"answer": tools.llm(state["question"])}
    g = StateGraph(State)
    g.add_node("solve", solve)
    g.add_edge(START, "solve")
    g.add_edge("solve", END)
    return g
"""


class EchoTools:
    def llm(self, messages, **params):
        return f"echo: {messages}"


def invalid(source: str, line_limit: int = 200) -> HarnessInvalid:
    with pytest.raises(HarnessInvalid) as info:
        compile_harness(source, EchoTools(), line_limit, trusted=True)
    return info.value


def test_good_source_compiles_and_answers():
    graph = compile_harness(GOOD, EchoTools(), trusted=True)
    assert answer_of(graph.invoke({"question": "2+2?"})) == "echo: 2+2?"


def test_syntax_error_names_its_line():
    exc = invalid("def build_graph(tools):\n    return (\n\nx = 1\n")
    assert exc.kind == "syntax"
    assert exc.line is not None and exc.line >= 2


def test_missing_build_graph():
    assert invalid("def make_graph(tools):\n    pass\n").kind == "no_build_graph"


def test_over_the_line_limit():
    source = GOOD + "\n".join(f"x{i} = {i}" for i in range(50))
    exc = invalid(source, line_limit=count_lines(source) - 1)
    assert exc.kind == "too_long"
    assert str(count_lines(source)) in exc.detail
    check_source(source, line_limit=count_lines(source))  # exactly at the limit is fine


def test_build_graph_raising_keeps_traceback_and_line():
    source = "def build_graph(tools):\n    x = 1\n    raise KeyError('no such node')\n"
    exc = invalid(source)
    assert exc.kind == "build_raised"
    assert exc.line == 3
    assert "KeyError" in exc.detail and "no such node" in exc.traceback


def test_module_level_code_raising_is_build_raised():
    exc = invalid("import no_such_module_xyz\ndef build_graph(tools):\n    pass\n")
    assert exc.kind == "build_raised" and "no_such_module_xyz" in exc.detail


def test_non_graph_return():
    exc = invalid("def build_graph(tools):\n    return {'not': 'a graph'}\n")
    assert exc.kind == "not_a_graph" and "dict" in exc.detail


def test_a_compiled_graph_is_taken_as_it_is_or_refused_by_its_state():
    """A compiled graph taking `question` runs as returned (no second compile), also as a
    module's `graph` without a build_graph; one whose input is neither `question` nor
    `messages` is one line naming what it takes."""
    compiled = GOOD.replace("    return g\n", "    return g.compile()\n")
    graph = compile_harness(compiled, EchoTools(), trusted=True)
    assert graph.invoke({"question": "hi"})["answer"] == "echo: hi"
    other = compiled.replace("question: str", "query: str").replace(
        'state["question"]', 'state["query"]')
    exc = invalid(other)
    assert exc.kind == "not_a_graph" and "input takes answer, query" in exc.detail
    assert "`messages`" in exc.detail and "\n" not in exc.detail
    module_graph = compiled.replace("def build_graph(tools):", "def make(tools):") + \
        "\nclass Echo:\n    def llm(self, m, **p):\n        return f'echo: {m}'\n" \
        "\ngraph = make(Echo())\n"
    assert "build_graph" not in module_graph
    graph = compile_harness(module_graph, None, trusted=True)
    assert graph.invoke({"question": "yo"})["answer"] == "echo: yo"
    assert "or a compiled `graph`" in invalid("x = 1\n").detail


def test_graph_that_does_not_compile():
    source = GOOD.replace('    g.add_edge(START, "solve")\n', "")
    assert invalid(source).kind == "compile_failed"


def test_no_answer_in_final_state():
    graph = compile_harness(GOOD.replace('"answer"', '"reply"'), EchoTools(), trusted=True)
    with pytest.raises(HarnessInvalid) as info:
        answer_of(graph.invoke({"question": "q"}))
    assert info.value.kind == "no_answer"


def test_untrusted_compile_is_refused_outside_a_worker():
    with pytest.raises(RuntimeError, match="sandbox"):
        compile_harness(GOOD, EchoTools())


def test_modules_do_not_stay_in_sys_modules():
    before = {name for name in sys.modules if name.startswith("_harness_")}
    for _ in range(3):
        compile_harness(GOOD, EchoTools(), trusted=True)
    after = {name for name in sys.modules if name.startswith("_harness_")}
    assert after == before


def test_postponed_annotations_resolve():
    source = "from __future__ import annotations\nimport operator\nfrom typing import Annotated\n" + GOOD.replace(
        "    question: str", "    question: str\n    notes: Annotated[list, operator.add]")
    graph = compile_harness(source, EchoTools(), trusted=True)
    assert answer_of(graph.invoke({"question": "q"})) == "echo: q"


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seeds_pass_static_checks_and_compile(name):
    source = seed_source(name)
    check_source(source)
    assert compile_harness(source, EchoTools(), trusted=True) is not None


def test_invalid_round_trips_through_a_dict():
    exc = HarnessInvalid("build_raised", "boom", line=3, traceback="tb")
    again = HarnessInvalid.from_dict(exc.to_dict())
    assert (again.kind, again.detail, again.line, again.traceback) == ("build_raised", "boom", 3, "tb")
    with pytest.raises(ValueError):
        HarnessInvalid("nonsense", "x")


def test_module_level_traceback_shows_the_harness_source_line():
    exc = invalid("x = 1\ny = [][3]  # the faulty line\ndef build_graph(tools):\n    pass\n")
    assert exc.kind == "build_raised" and exc.line == 2
    assert "the faulty line" in exc.traceback


class _ParsesWhenCollected:
    """Cyclic garbage whose finalizer parses: what 3.11's traceback printing does when an
    exception is ignored in a `__del__` during another parse."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        ast.parse("x = (1, [2, {3: 4}])")


def test_parse_source_survives_a_finalizer_that_parses() -> None:
    import gc

    source = Path(compiler.__file__).read_text()
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for _ in range(5):
            for _ in range(20):
                _ParsesWhenCollected()
            tree = compiler.parse_source(source)
            assert any(isinstance(n, ast.FunctionDef) and n.name == "parse_source"
                       for n in tree.body)
    finally:
        gc.set_threshold(*threshold)
        gc.collect()


def test_a_candidate_nested_too_deeply_is_invalid_not_a_crash() -> None:
    with no_collection_at_depth(), pytest.raises(compiler.HarnessInvalid,
                                                 match="nested too deeply"):
        compiler.check_source("def build_graph(tools):\n    return " + "1+" * 100000 + "1\n")
