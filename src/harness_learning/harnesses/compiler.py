"""Harness source text -> module -> `build_graph(tools)` -> compiled LangGraph graph.

`check_source` is static (it only parses), so it is safe anywhere. `compile_harness` executes
untrusted code: it runs inside a sandbox worker, or in-process only when the caller opts in
for a reviewed harness (`trusted=True`).
"""

from __future__ import annotations

import ast
import gc
import itertools
import linecache
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.contract import LINE_LIMIT

if TYPE_CHECKING:
    from langgraph.pregel import Pregel

    from harness_learning.harnesses.contract import Tools

INVALID_KINDS = (
    "syntax",
    "no_build_graph",
    "too_long",
    "build_raised",
    "not_a_graph",
    "compile_failed",
    "no_answer",
)
_counter = itertools.count()


class HarnessInvalid(Exception):
    """A harness that cannot be used, with a reason a Proposer can act on."""

    def __init__(
        self, kind: str, detail: str, line: int | None = None, traceback: str | None = None
    ) -> None:
        if kind not in INVALID_KINDS:
            raise ValueError(f"unknown HarnessInvalid kind {kind!r}; expected one of {INVALID_KINDS}")
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"{kind}: {detail}{where}")
        self.kind = kind
        self.detail = detail
        self.line = line
        self.traceback = traceback

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "line": self.line,
                "traceback": self.traceback}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HarnessInvalid:
        return cls(d["kind"], d["detail"], d.get("line"), d.get("traceback"))

    def __reduce__(self):
        return (type(self), (self.kind, self.detail, self.line, self.traceback))


def count_lines(source: str) -> int:
    """Lines as a reader counts them (a trailing newline does not start a new line)."""
    return len(source.splitlines())


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, safe from a CPython 3.11 fault: when the garbage collector runs a finalizer
    during a parse and that finalizer parses too (3.11's traceback printing does, for an
    exception ignored in a `__del__`), the outer parse fails with "AST constructor recursion
    depth mismatch". The text is then parsed again with the collector paused, which no
    finalizer can interrupt. Every other error is the text's own."""
    try:
        return ast.parse(source, filename=filename)
    except SystemError as exc:
        if "recursion depth mismatch" not in str(exc):
            raise
    paused = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=filename)
    finally:
        if paused:
            gc.enable()


def check_source(source: str, line_limit: int = LINE_LIMIT) -> ast.Module:
    """Static checks (parse only, nothing runs): syntax, a top-level `build_graph`, the line
    limit, a tree at most `MAX_DEPTH` levels deep. Returns the parsed module; raises
    `HarnessInvalid`."""
    if not isinstance(source, str):
        raise HarnessInvalid("syntax", f"source must be text, got {type(source).__name__}")
    try:
        tree = parse_source(source, filename="<harness>")
    except SyntaxError as exc:
        raise HarnessInvalid("syntax", exc.msg or "invalid syntax", line=exc.lineno) from None
    except ValueError as exc:  # e.g. null bytes
        raise HarnessInvalid("syntax", str(exc)) from None
    except (RecursionError, MemoryError):
        raise HarnessInvalid("syntax", "nested too deeply for the parser") from None
    n = count_lines(source)
    if n > line_limit:
        raise HarnessInvalid("too_long", f"{n} lines, over the limit of {line_limit}")
    if (depth := tree_depth(tree)) > MAX_DEPTH:
        raise HarnessInvalid("syntax", f"nested {depth} levels deep, over the limit of "
                             f"{MAX_DEPTH}")
    defined = any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "build_graph"
        for node in tree.body
    ) or any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "build_graph" for t in node.targets)
        for node in tree.body
    )
    if not defined and not _assigns(tree, MODULE_GRAPH):
        raise HarnessInvalid("no_build_graph", "no top-level function `build_graph(tools)` "
                             f"(or a compiled `{MODULE_GRAPH}`, as langgraph.json names one)")
    return tree


MAX_DEPTH = 100
"""The deepest syntax tree a harness may have. This package's own modules reach 18 levels; a
Proposer caught in a loop writes `1+1+...+1`, a tree a thousand levels deep that the parser
takes but Python's recursive tree walkers (`ast.dump`, `ast.unparse`, `copy.deepcopy`) do not."""


def tree_depth(tree: ast.AST) -> int:
    """The number of levels of `tree`, counted without recursion."""
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


MODULE_GRAPH = "graph"
"""A module-level compiled graph a harness may be instead of a `build_graph` (LangGraph's own
convention: langgraph.json names `module.py:graph`)."""


def _assigns(tree: ast.Module, name: str) -> bool:
    return any(isinstance(node, ast.Assign | ast.AnnAssign) and any(
        isinstance(t, ast.Name) and t.id == name
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
        for node in tree.body)


@contextmanager
def harness_module(source: str, filename: str | None = None) -> Iterator[types.ModuleType]:
    """Execute `source` in a fresh module, registered in `sys.modules` only while the block
    runs (LangGraph resolves state annotations through it) and removed afterwards: modules
    left there leak memory per candidate. Source lines stay readable for tracebacks meanwhile."""
    name = f"_harness_{next(_counter)}"
    filename = filename or f"<harness {name}>"
    module = types.ModuleType(name)
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[name] = module
    try:
        code = compile(source, filename, "exec")
        exec(code, module.__dict__)
        yield module
    except BaseException as exc:  # format while the source lines are still readable
        exc.harness_traceback = harness_traceback(exc)  # type: ignore[attr-defined]
        raise
    finally:
        sys.modules.pop(name, None)
        linecache.cache.pop(filename, None)


def harness_traceback(exc: BaseException, filename_prefix: str = "<harness") -> tuple[str, int | None]:
    """The formatted traceback and the innermost line number inside harness code (as first
    formatted inside `harness_module`, where the source lines are still known)."""
    captured = getattr(exc, "harness_traceback", None)
    if isinstance(captured, tuple):
        return captured
    text = "".join(traceback.format_exception(exc))
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename.startswith(filename_prefix):
            line = lineno
    return text, line


def build(module: types.ModuleType, tools: Tools) -> Pregel:
    """Call the module's `build_graph(tools)`, check it returned a StateGraph, compile it. A
    compiled graph (a user's own agent, e.g. `create_react_agent(...)`) is taken as it is,
    its chat model calls routed to the Solver (`harnesses.compiled_agent`)."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    build_graph = getattr(module, "build_graph", None)
    if build_graph is None and isinstance(getattr(module, MODULE_GRAPH, None), Pregel):
        return _compiled_agent(getattr(module, MODULE_GRAPH), tools)
    if not callable(build_graph):
        raise HarnessInvalid("no_build_graph", "`build_graph` is not callable (and no "
                             f"compiled `{MODULE_GRAPH}` is defined)")
    try:
        graph = build_graph(tools)
    except Exception as exc:
        text, line = harness_traceback(exc)
        raise HarnessInvalid(
            "build_raised", f"{type(exc).__name__}: {exc}", line=line, traceback=text
        ) from None
    if isinstance(graph, Pregel):
        return _compiled_agent(graph, tools)
    if not isinstance(graph, StateGraph):
        raise HarnessInvalid(
            "not_a_graph", f"build_graph returned {type(graph).__name__}, not a StateGraph "
            "or a compiled graph"
        )
    try:
        return graph.compile()
    except Exception as exc:
        text, line = harness_traceback(exc)
        raise HarnessInvalid(
            "compile_failed", f"{type(exc).__name__}: {exc}", line=line, traceback=text
        ) from None


def _compiled_agent(graph: Pregel, tools: Tools) -> Pregel:
    from harness_learning.harnesses.compiled_agent import as_harness

    try:
        return as_harness(graph, tools, route=_in_worker())
    except ValueError as exc:
        raise HarnessInvalid("not_a_graph", str(exc)) from None


def compile_harness(
    source: str,
    tools: Tools,
    line_limit: int = LINE_LIMIT,
    *,
    filename: str | None = None,
    trusted: bool = False,
    on_compiled: Callable[[Pregel], object] | None = None,
) -> Pregel:
    """Check, execute and compile a harness; return the compiled graph.

    This runs the harness's module-level code and `build_graph`. Outside a sandbox worker,
    pass `trusted=True` to say the source was reviewed; otherwise this refuses to run.
    `on_compiled(graph)` runs while the module is still registered (its state types resolve:
    what reading the graph's schemas needs)."""
    if not trusted and not _in_worker():
        raise RuntimeError(
            "compile_harness runs untrusted code: call it inside a sandbox worker, or pass "
            "trusted=True for a reviewed harness"
        )
    check_source(source, line_limit)
    try:
        with harness_module(source, filename) as module:
            graph = build(module, tools)
            if on_compiled is not None:
                on_compiled(graph)
            return graph
    except HarnessInvalid:
        raise
    except SyntaxError as exc:
        raise HarnessInvalid("syntax", exc.msg or "invalid syntax", line=exc.lineno) from None
    except Exception as exc:  # module-level code raised
        text, line = harness_traceback(exc)
        raise HarnessInvalid(
            "build_raised", f"module code raised {type(exc).__name__}: {exc}", line=line,
            traceback=text,
        ) from None


def answer_of(output: object) -> str:
    """The `answer` of a finished run, as text; `HarnessInvalid("no_answer")` if missing."""
    if not isinstance(output, dict) or output.get("answer") is None:
        keys = sorted(output) if isinstance(output, dict) else type(output).__name__
        raise HarnessInvalid("no_answer", f"the run's final state has no `answer` (state: {keys})")
    answer = output["answer"]
    return answer if isinstance(answer, str) else str(answer)


_WORKER_FLAG = "_harness_sandbox_worker"


def _in_worker() -> bool:
    return bool(getattr(sys, _WORKER_FLAG, False))


def mark_worker_process() -> None:
    """Called by the sandbox worker's entry point: this process may run untrusted code."""
    setattr(sys, _WORKER_FLAG, True)
