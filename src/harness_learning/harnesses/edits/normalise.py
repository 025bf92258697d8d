"""When two harness sources are the same program: equal up to comments and layout.

A small Proposer often repeats a change it already made in other whitespace, or with a comment
added; judged again, the repeat costs a selection evaluation and teaches nothing. The adapter
refuses a candidate whose normalised source equals a version the run already judged
(`graphs.adapter.run_memory`), so "the same" has to be one definition: the syntax tree. Docstrings
and string literals stay part of it (a prompt string *is* the program's behaviour).

`inert_change` asks a looser question: does an edit change anything that runs? A 1.5B Proposer
asked to rewrite a nested `solve` often appends a second, top-level `solve` that nothing calls,
or only rewords a docstring. Evaluated, such a candidate ties its parent; adopted at the tie, its
dead copy makes every later focused edit of `solve` ambiguous (seen in a run that then spent ten
proposals on that refusal). The judge refuses it before the Solver runs.
"""

from __future__ import annotations

import ast
import hashlib
import symtable

from harness_learning.harnesses.compiler import MODULE_GRAPH

ENTRY_POINTS = frozenset({"build_graph", MODULE_GRAPH})
"""Top-level names the compiler looks up by name: used though no code refers to them."""
DYNAMIC_LOOKUPS = frozenset({"globals", "vars", "locals", "eval", "exec", "__import__",
                             "importlib", "sys"})
"""Names through which code can reach a function without naming it: where one is used, no
top-level function is taken for dead."""


def normalised_source(source: str) -> str:
    """`source` with comments, blank lines, indentation width and line breaks inside brackets
    taken out: the dump of its syntax tree (no positions). A source that does not parse is
    compared line by line with outer whitespace and blank lines dropped."""
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # ValueError: a NUL byte; RecursionError: a tree too deep to walk (`1+1+...+1`, a
        # degenerate answer's loop), which only the compiler's check may call invalid
        return "\n".join(line.strip() for line in source.splitlines() if line.strip())


def normalised_sha(source: str) -> str:
    """The content address of `normalised_source(source)`: equal for sources that are one
    program."""
    text = normalised_source(source)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def inert_change(parent: str, new: str) -> str | None:
    """Why the edit from `parent` to `new` changes nothing that runs, or None if it may.

    Both sides are compared without their docstrings and without their dead top-level
    functions (undecorated, not an entry point, named by no code in any scope; `symtable`
    resolves a nested function's own `solve` apart from a top-level one). A side that does
    not parse, or that can look names up dynamically, is never called inert."""
    try:
        old_form, old_dead = _running_form(parent)
        new_form, new_dead = _running_form(new)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _Dynamic):
        return None
    if old_form != new_form:
        return None
    changed = [name for name, dump in new_dead.items() if old_dead.get(name) != dump]
    if changed:
        return (f"it adds or changes only {', '.join(repr(n) for n in changed)}, which nothing "
                "calls: the graph runs as before")
    return "it changes only docstrings or functions nothing calls: the graph runs as before"


class _Dynamic(Exception):
    """The source can reach names without naming them."""


def _running_form(source: str) -> tuple[str, dict[str, str]]:
    """The dump of `source`'s tree without docstrings and dead top-level functions, and each
    dead function's own dump by name."""
    tree = ast.parse(source)
    used = _referenced(source)
    if used & DYNAMIC_LOOKUPS:
        raise _Dynamic
    dead = {node.name: node for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and not node.decorator_list and node.name not in ENTRY_POINTS
            and node.name not in used}
    tree.body = [node for node in tree.body
                 if not (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                         and node.name in dead)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree), {name: ast.dump(node) for name, node in dead.items()}


def _referenced(source: str) -> set[str]:
    """The global names some code of `source` reads: at module level, or in any function or
    class where the name is not its own or an enclosing function's."""
    used: set[str] = set()

    def visit(table: symtable.SymbolTable) -> None:
        top = table.get_type() == "module"
        for sym in table.get_symbols():
            if sym.is_referenced() and (top or sym.is_global()):
                used.add(sym.get_name())
        for child in table.get_children():
            visit(child)

    visit(symtable.symtable(source, "<harness>", "exec"))
    return used
