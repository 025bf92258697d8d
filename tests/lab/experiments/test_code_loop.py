"""The code-loop detector names the form of an error-feedback retry over Solver-written code, and
tells the programs that only look like one (no retry, or a retry that hides the error) apart."""

from __future__ import annotations

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.edits.inline import inline_block
from harness_learning.harnesses.edits.operators import OPERATORS, apply_operator
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import Evaluation, SQLiteLogStore
from harness_learning_lab.experiments.code_loop import (
    CodeLoop,
    code_loop_form,
    working_inline_loop,
    working_inline_loop_in_log,
)
from harness_learning_lab.experiments.structure import analyze

SEED = seed_source("reasoning_direct")
BLOCK = apply_operator(OPERATORS["interpreter"], SEED)
INLINE = inline_block(BLOCK, "interpreter")
TAIL = '''
    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
'''
HEAD = '''from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
'''
ONCE = HEAD + '''    def solve(state: State) -> dict:
        code = tools.llm("Write Python that prints the answer to: " + state["question"])
        result = tools.python(code, timeout=5)
        if result.error:
            return {"answer": tools.llm("It failed: " + result.error + "\\nAnswer directly.")}
        return {"answer": result.stdout.strip()}
''' + TAIL
BLIND_RETRY = HEAD + '''    def solve(state: State) -> dict:
        for _ in range(3):
            code = tools.llm("Write Python that prints the answer to: " + state["question"])
            result = tools.python(code, timeout=5)
            if result.error is None and result.stdout.strip():
                return {"answer": result.stdout.strip()}
        return {"answer": ""}
''' + TAIL
RENAMED_RETRY = HEAD.replace("build_graph(tools)", "build_graph(t)") + '''    def solve(s: State) -> dict:
        ask, out = [{"role": "user", "content": "Program for: " + s["question"]}], ""
        for _ in range(2):
            run = t.python(t.llm(ask), timeout=5)
            if not run.error:
                return {"answer": run.stdout.strip()}
            ask.append({"role": "user", "content": "Error: " + run.error})
        return {"answer": out}
''' + TAIL


def test_the_seed_has_no_code_loop():
    assert code_loop_form(SEED) == CodeLoop(False, False, None)
    assert not analyze(SEED).code_loop


def test_the_block_and_the_operator_are_named():
    assert code_loop_form(BLOCK).form == "block"
    assert code_loop_form(BLOCK, origin="operator:interpreter").form == "operator"
    assert analyze(BLOCK).code_loop  # the block's loop counts


def test_the_inlined_loop_is_inline_under_any_names():
    assert code_loop_form(INLINE) == CodeLoop(True, True, "inline")
    assert analyze(INLINE).code_loop
    assert code_loop_form(RENAMED_RETRY) == CodeLoop(True, True, "inline")


def test_code_without_a_retry_or_without_the_error_is_no_loop():
    assert code_loop_form(ONCE) == CodeLoop(True, False, None)
    assert code_loop_form(BLIND_RETRY) == CodeLoop(True, False, None)
    assert code_loop_form("def build_graph(tools):\n    return (") is None


def solved(answer: str, code: str, reply: str, stdout: str) -> ProblemResult:
    return ProblemResult("p", answer=answer, calls=(
        ToolCall("llm", {"messages": "write it"}, reply),
        ToolCall("python", {"code": code, "timeout": 10}, {"stdout": stdout, "error": None})))


def test_a_working_inline_loop_needs_the_solvers_program_to_give_the_answer():
    code = "print(17 * 23)"
    ran = solved("391", code, f"```python\n{code}\n```", "391\n")
    other = solved("390", code, f"```python\n{code}\n```", "391\n")  # answered otherwise
    not_solvers = solved("391", code, "I cannot write code.", "391\n")
    assert working_inline_loop(INLINE, [other, ran])
    assert not working_inline_loop(INLINE, [other, not_solvers])
    assert not working_inline_loop(BLOCK, [ran])  # the block's loop is not written inline
    assert not working_inline_loop(BLIND_RETRY, [ran])


def test_the_traces_are_read_back_from_the_log(tmp_path):
    store = SQLiteLogStore(tmp_path)
    run_id = store.init_run({"task": "rg:basic_arithmetic"}).run_id
    sha = store.put_version(INLINE, None, 0, "inlined")
    code = "print(2 + 2)"
    store.put_evaluations([Evaluation(run_id, sha, "selection", 1,
                                      solved("4", code, f"```python\n{code}\n```", "4\n"))])
    assert working_inline_loop_in_log(store, sha)
    other = store.put_version(INLINE + "\n# v2\n", None, 0, "feedback traces only")
    store.put_evaluations([Evaluation(run_id, other, "feedback", 1,
                                      solved("4", code, f"```python\n{code}\n```", "4\n"))])
    assert not working_inline_loop_in_log(store, other)  # only selection problems count
    store.close()
