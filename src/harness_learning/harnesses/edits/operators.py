"""Operator candidates: a building block applied to a harness by rewriting its source, no model.

An operator renames the harness's `build_graph` to `build_graph_before_<name>`, imports its
block from `harness_learning.harnesses.blocks` and defines a new `build_graph` that wraps the
old one (`harnesses.blocks.compose`). Whether it applies is read from the source's syntax tree:
the module must define `build_graph`, must not use the block already, and must call the tools
the block needs (a retrieval block needs `.search(...)`). Nothing here reads a seed's text, so
an operator applies to any harness of that shape, whatever its nodes and variables are called.

Users add their own with `register_operator(Operator(...))`: a block of theirs importable in the
sandbox, or a `transform` of the source.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

BLOCKS_MODULE = "harness_learning.harnesses.blocks"
BUILD = "build_graph"


class OperatorError(ValueError):
    """An operator that is unknown, or that does not fit the harness (its message says why)."""


@dataclass(frozen=True)
class Operator:
    """One operator: the block it applies and when it fits."""

    name: str
    block: str
    """The combinator's name in `module`, called as `block(tools, build_graph_before_<name>)`."""
    use: str
    """One line: what the block does, for the Proposer's menu and the docs."""
    needs: frozenset[str] = frozenset()
    """Tool methods the harness must already call (`search` for retrieval blocks)."""
    cost: str = ""
    """Extra Solver calls per problem, in words (shown in the menu)."""
    module: str = BLOCKS_MODULE
    transform: Callable[[str], str] | None = field(default=None, compare=False)
    """A user's own rewrite of the source, used instead of wrapping `build_graph`."""
    demonstrations: bool = False
    """The block also takes few-shot demonstrations, written into the source as the declared
    `DEMONSTRATIONS` list; without any to give (the adapter gives them only under the
    held-out split) the operator does not fit."""


Demonstrations = tuple[tuple[str, str], ...]
DEMONSTRATIONS = "DEMONSTRATIONS"  # harnesses.blocks.reasoning.DEMONSTRATIONS (not imported:
# the edits layer stays free of LangGraph)


OPERATORS: dict[str, Operator] = {}


def register_operator(op: Operator) -> Operator:
    """Add `op` to the operators `--operators auto` may choose (a name is registered once)."""
    if op.name in OPERATORS and OPERATORS[op.name] != op:
        raise OperatorError(f"operator {op.name!r} is already registered")
    OPERATORS[op.name] = op
    return op


# In the order `auto` tries them: cheapest first, since each round tries only a few.
for _op in (
    Operator("interpreter", "with_interpreter", "the Solver writes a Python program that "
             "prints the answer; errors go back for a fix (up to 2 retries)", cost="1-3 calls"),
    Operator("plan", "with_plan", "decomposition: the Solver writes numbered steps first, and "
             "the harness solves with them", cost="+1 call"),
    Operator("verify", "with_verify", "the Solver checks the answer; a 'wrong' verdict asks "
             "again (up to 2 retries)", cost="+1-5 calls"),
    Operator("vote", "with_vote", "self-consistency: answer 5 times with sampling, keep the "
             "most common answer", cost="5x the harness"),
    Operator("few_shot", "with_demonstrations", "few-shot: the harness solves each problem "
             "after 3 solved feedback problems", cost="no extra call", demonstrations=True),
    Operator("rewrite_query", "with_query_rewrite", "each search also runs a Solver-written "
             "keyword query", needs=frozenset({"search"}), cost="+1 call per search"),
    Operator("extra_hop", "with_extra_hop", "each search takes one more hop for the missing "
             "fact", needs=frozenset({"search"}), cost="+1 call per search"),
    Operator("check", "with_check", "draft and check: a second search with the draft answer, "
             "which is kept only if supported", needs=frozenset({"search"}), cost="+1 call"),
    Operator("passages", "with_answer_from_passages", "the answer reads the passages every "
             "search retrieved (bounded in tokens), not the harness's notes; its summaries only "
             "steer the next query", needs=frozenset({"search"}), cost="+1 call"),
    Operator("short_answer", "with_short_answer", "the Solver cuts the answer to its shortest "
             "span or yes/no, then it is normalised (articles, punctuation)",
             needs=frozenset({"search"}), cost="+1 call"),
):
    register_operator(_op)


@dataclass(frozen=True)
class Shape:
    """What the operators read of a harness's syntax tree."""

    builder_line: int
    """Line (1-based) of the module-level `def build_graph`."""
    last_import_line: int
    """Last line of the module's last top-level import (0: none)."""
    tool_calls: frozenset[str]
    """Tools the harness calls, as `tools.<attr>(...)` (`search`, `llm`, `python`, ...), by
    whatever name the builder gives its tools."""
    names: frozenset[str]
    """Every name the module binds or uses (imports, functions, variables)."""


def shape_of(source: str) -> Shape:
    """The harness's shape; `OperatorError` when it has no module-level `build_graph`."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise OperatorError(f"the harness does not parse: {err.msg} (line {err.lineno})") from err
    builders = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == BUILD]
    if not builders:
        raise OperatorError("the harness defines no module-level `def build_graph(tools)` "
                            "(a compiled `graph` alone is edited as a whole program)")
    compiled = _compiled_return(builders[-1])
    if compiled is not None:
        raise OperatorError(f"build_graph returns a compiled graph ({compiled}), and operators "
                            "wrap the StateGraph it builds; Proposer edits still apply")
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    calls = {n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name) and n.func.value.id in _tool_names(tree)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    names |= {a.asname or a.name for n in imports for a in n.names}
    return Shape(builders[-1].lineno, max((n.end_lineno or n.lineno for n in imports), default=0),
                 frozenset(calls), frozenset(names))


COMPILED_MAKERS = frozenset({"compile", "create_react_agent", "create_agent"})
"""Calls whose result is a compiled graph (a user's own agent, returned as it is)."""


def _compiled_return(builder: ast.FunctionDef) -> str | None:
    """The call a builder returns when it makes a compiled graph (`g.compile()`,
    `create_react_agent(...)`), else None; nested functions' returns are not the builder's."""
    todo: list[ast.AST] = list(builder.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            func = node.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in COMPILED_MAKERS:
                return f"{name}(...)"
        todo.extend(ast.iter_child_nodes(node))
    return None


def _tool_names(tree: ast.Module) -> set[str]:
    """The names `tools` goes by: the first parameter of each builder, and `tools` itself."""
    names = {"tools"}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith(BUILD) and node.args.args:
            names.add(node.args.args[0].arg)
    return names


def misfit(op: Operator, source: str, demonstrations: Demonstrations = ()) -> str | None:
    """Why `op` does not apply to `source` (with `demonstrations` to give), or None when it
    does."""
    try:
        return _misfit(op, shape_of(source), demonstrations)
    except OperatorError as err:
        return str(err)


def _misfit(op: Operator, shape: Shape, demonstrations: Demonstrations = ()) -> str | None:
    if op.transform is None and op.block in shape.names:
        return f"the harness already uses {op.block}"
    missing = sorted(op.needs - shape.tool_calls)
    if missing:
        return f"the harness never calls tools.{', tools.'.join(missing)}"
    if op.demonstrations and not demonstrations:
        return ("it needs demonstrations: feedback problems that no selection problem can be "
                "(the held-out split, with a feedback side beyond the round's own)")
    if op.demonstrations and DEMONSTRATIONS in shape.names:
        return f"the harness already declares {DEMONSTRATIONS}"
    return None


def apply_operator(op: Operator, source: str, demonstrations: Demonstrations = ()) -> str:
    """The harness with `op`'s block applied; `OperatorError` when it does not fit."""
    unfit = f"operator {op.name!r} does not fit this harness"
    try:
        shape = shape_of(source)
    except OperatorError as err:
        raise OperatorError(f"{unfit}: {err}") from None
    reason = _misfit(op, shape, demonstrations)
    if reason is not None:
        raise OperatorError(f"{unfit}: {reason}")
    if op.transform is not None:
        return op.transform(source)
    before = _free_name(f"{BUILD}_before_{op.name}", shape.names)
    lines = source.rstrip("\n").split("\n")
    def_line = lines[shape.builder_line - 1]
    lines[shape.builder_line - 1] = def_line.replace(f"def {BUILD}(", f"def {before}(", 1)
    header = [f"from {op.module} import {op.block}"]
    args = f"tools, {before}"
    if op.demonstrations:
        header += ["", f"{DEMONSTRATIONS} = [  # feedback problems, never scored for selection",
                   *(f"    ({q!r}, {a!r})," for q, a in demonstrations), "]"]
        args += f", {DEMONSTRATIONS}"
    lines[shape.last_import_line:shape.last_import_line] = header
    wrapper = ["", "", f"def {BUILD}(tools):", f'    """Operator `{op.name}`: {op.use}."""',
               f"    return {op.block}({args})"]
    return "\n".join(lines + wrapper) + "\n"


def _free_name(name: str, taken: frozenset[str]) -> str:
    n, candidate = 2, name
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def resolve_operators(spec: str | list[str] | None) -> list[Operator]:
    """`auto` (every registered operator), `none`, or a comma-separated list of names."""
    if spec is None or spec == "none" or spec == []:
        return []
    if spec == "auto":
        return list(OPERATORS.values())
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    unknown = [n for n in names if n not in OPERATORS]
    if unknown:
        raise OperatorError(f"unknown operator(s) {', '.join(unknown)}; known: "
                            f"{', '.join(OPERATORS)} (or auto, none)")
    return [OPERATORS[n] for n in names]


def fitting(ops: list[Operator], source: str,
            demonstrations: Demonstrations = ()) -> list[Operator]:
    """The operators of `ops` that fit `source` (given `demonstrations`), in their order."""
    return [op for op in ops if misfit(op, source, demonstrations) is None]
