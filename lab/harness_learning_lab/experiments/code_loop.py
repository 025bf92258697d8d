"""The interpreter loop, measured from the program: does it run Solver-written code in a retry
whose next prompt carries the error, and in which form.

Forms, in the order they are recognised:
- `operator`: the candidate's origin is `operator:interpreter` (the adapter applied the block).
- `block`: the source calls the interpreter block of `harness_learning.harnesses.blocks`
  (`with_interpreter` or `interpreter_loop`), whoever wrote it.
- `inline`: the program writes the loop itself, with no import from the blocks package. By
  syntax tree (the flow analysis of `structure.Flow`): a `tools.python(...)` call whose code is
  Solver-derived, and a `tools.llm(...)` call whose argument is derived from the `error` (or
  `stderr`, `traceback`) of a `tools.python` result, both inside one `for`/`while` loop of a
  function, or both in graph nodes on one cycle of the graph.

A *working inline loop* also needs the run: on at least one selection problem a program the
Solver wrote (its code is in a Solver reply of that problem) printed the problem's answer
(`working_inline_loop`, which reads the traces the evaluation logged).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness_learning_lab.experiments.structure import (
    _LOOPS,
    Flow,
    _enclosing,
    _graph_cycle_nodes,
    _str,
    calls_interpreter_block,
    imports_blocks,
    tool_name,
)

OPERATOR_ORIGIN = "operator:interpreter"
ERROR_FIELDS = frozenset({"error", "stderr", "traceback"})
FORMS = ("inline", "block", "operator")


@dataclass(frozen=True)
class CodeLoop:
    """What the program does with Solver-written code."""

    runs_solver_code: bool
    """`tools.python` runs Solver-derived text somewhere."""
    error_retry: bool
    """...inside a retry whose next Solver prompt carries the error."""
    form: str | None
    """`inline`, `block` or `operator` when both hold; None otherwise."""


class _ErrorFlow(Flow):
    """Values derived from the error of a `tools.python` result (its `error` attribute or
    key), through the same assignments, containers and state keys as `Flow`."""

    def __init__(self, tree: ast.Module, results: Flow) -> None:
        self.results = results
        super().__init__(tree, "<error>")

    def derived(self, expr: ast.AST, scope: ast.AST, extra: frozenset[str] = frozenset()) -> bool:
        field_of = (expr.attr if isinstance(expr, ast.Attribute) else
                    _str(expr.slice) if isinstance(expr, ast.Subscript) else None)
        if field_of in ERROR_FIELDS and self.results.derived(expr.value, scope):
            return True
        return super().derived(expr, scope, extra)


def _as_tools(tree: ast.Module) -> ast.Module:
    """The tree with the builder's own name for the tools (`def build_graph(t)`) read as
    `tools`, which the flow analysis looks for."""
    builders = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_graph"
                and n.args.args]
    name = builders[-1].args.args[0].arg if builders else "tools"
    if name != "tools":
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == name:
                node.id = "tools"
            elif isinstance(node, ast.arg) and node.arg == name:
                node.arg = "tools"
    return tree


def _together(a: ast.AST, b: ast.AST, scope_of: dict, cycle: set[str]) -> bool:
    """Both calls run again on a retry: inside one loop of one function, or both in graph
    nodes on a cycle."""
    if scope_of[a] is scope_of[b]:
        for loop in ast.walk(scope_of[a]):
            if isinstance(loop, _LOOPS):
                inside = {id(n) for n in ast.walk(loop)}
                if id(a) in inside and id(b) in inside:
                    return True
    return (getattr(scope_of[a], "name", None) in cycle
            and getattr(scope_of[b], "name", None) in cycle)


def code_loop_form(source: str, origin: str | None = None) -> CodeLoop | None:
    """The program's code loop and its form; None when the source does not parse."""
    try:
        tree = _as_tools(ast.parse(source))
    except SyntaxError:
        return None
    imports, calls_block = imports_blocks(tree), calls_interpreter_block(tree)
    if origin == OPERATOR_ORIGIN or calls_block:
        return CodeLoop(True, True, "operator" if origin == OPERATOR_ORIGIN else "block")
    scope_of = _enclosing(tree)
    solver, results = Flow(tree, "llm"), Flow(tree, "python")
    errors = _ErrorFlow(tree, results)
    cycle = _graph_cycle_nodes(tree)
    calls = [n for n in ast.walk(tree) if tool_name(n) is not None]
    runs = [c for c in calls if tool_name(c) == "python"
            and any(solver.derived(a, scope_of[c]) for a in [*c.args, *c.keywords])]
    asks = [c for c in calls if tool_name(c) == "llm"
            and any(errors.derived(a, scope_of[c]) for a in [*c.args, *c.keywords])]
    retry = any(_together(r, a, scope_of, cycle) for r in runs for a in asks)
    return CodeLoop(bool(runs), retry, "inline" if retry and not imports else None)


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _solver_program_answered(result: Any) -> bool:
    """One problem's trace: a program whose code is in an earlier Solver reply printed the
    problem's answer (as one of its output lines)."""
    answer = str(_field(result, "answer") or "").strip()
    if not answer:
        return False
    replies: list[str] = []
    for call in _field(result, "calls") or ():
        tool, args, out = _field(call, "tool"), _field(call, "args") or {}, _field(call, "result")
        if tool == "llm":
            replies.append(str(out or ""))
        elif tool == "python" and isinstance(out, dict) and not out.get("error"):
            code = str(args.get("code") or "").strip()
            printed = {line.strip() for line in str(out.get("stdout") or "").splitlines()}
            if code and any(code in r for r in replies) and answer in printed:
                return True
    return False


def working_inline_loop(source: str, selection_results: Iterable[Any]) -> bool:
    """A working inline loop: the source writes the loop inline (`code_loop_form`), and on at
    least one selection problem (a `ProblemResult`, or its logged dict, with `answer` and the
    `calls` trace) the Solver's program printed the answer."""
    found = code_loop_form(source)
    return (found is not None and found.form == "inline"
            and any(_solver_program_answered(r) for r in selection_results))


def working_inline_loop_in_log(store: Any, sha: str) -> bool:
    """`working_inline_loop` for a version of a run, from its logged selection traces."""
    return working_inline_loop(store.get_version_source(sha),
                               [e.result for e in store.iter_evaluations(sha, "selection")])
