"""Function edits: the completion holds the new version of one function of the program.

A focused edit, as GEPA mutates one component at a time: a 1.5B Proposer rewrites a ten-line
function far more reliably than it copies SEARCH text exactly or rewrites a whole program. The
completion's Python block holds optional imports, optional module-level constants
(`NAME = ...`) and exactly one `def`; the function of that name in the program (a node function
nested in `build_graph` counts) is replaced by it, re-indented to where the old one stood; a
constant replaces its namesake (or is added after the imports), and the imports are added at the
top if missing. Small models often answer with the whole program instead: a block that defines
`build_graph` at its top level is taken as the whole new program. They also copy the format's
placeholder line for imports verbatim; that line is dropped (no Python line reads so).
"""

from __future__ import annotations

import ast
import textwrap

from harness_learning.harnesses.edits.edit import normalize_newlines
from harness_learning.harnesses.edits.errors import EditError
from harness_learning.harnesses.edits.whole_program import PYTHON_TAGS, fenced_blocks

IMPORTS_PLACEHOLDER = "<imports it needs, if any>"
"""The format's placeholder line for imports (`harnesses.edits.instructions`)."""


def parse_function(completion: str) -> str:
    """The code of the completion's one Python block that defines a function."""
    blocks = [b for b in fenced_blocks(completion) if b.info in PYTHON_TAGS]
    if not blocks:
        raise EditError("no_edit_found", "no ```python block holding the new function")
    defining = [b for b in blocks if "def " in "\n".join(b.body)]
    if len(defining) > 1:
        raise EditError("multiple_programs", f"{len(defining)} code blocks define functions; "
                                             "give the one new function in one block")
    block = (defining or blocks)[0]
    if not block.closed:
        raise EditError("malformed_block", f"the code fence opened at line {block.line} is "
                                           "never closed")
    body = [line for line in block.body if line.strip() != IMPORTS_PLACEHOLDER]
    return textwrap.dedent("\n".join(body)).strip("\n") + "\n"


def parsed_block(code: str) -> ast.Module:
    try:
        return ast.parse(code)
    except SyntaxError as err:
        line = f": {err.text.strip()!r}" if err.text and err.text.strip() else ""
        raise EditError("malformed_block", f"the new function does not parse: {err.msg} "
                                           f"(line {err.lineno}{line})") from None
    except (ValueError, RecursionError, MemoryError) as err:
        # ValueError: a NUL byte or a lone surrogate (a JSON "\ud800" from the server);
        # RecursionError: nested too deeply for the parser
        detail = str(err) if isinstance(err, ValueError) else "nested too deeply for the parser"
        raise EditError("malformed_block", f"the new function does not parse: {detail}") from None


def is_program(tree: ast.Module) -> bool:
    """The block is a whole program (it defines `build_graph` at its top level)."""
    return any(isinstance(n, ast.FunctionDef) and n.name == "build_graph" for n in tree.body)


def new_function(tree: ast.Module) -> tuple[list[ast.stmt], list[ast.Assign], ast.FunctionDef]:
    """(the imports, the constants, the one function) of a function edit, or `EditError`."""
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    consts = [n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
              and isinstance(n.targets[0], ast.Name)]
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    other = [n for n in tree.body if n not in imports and n not in defs and n not in consts]
    if len(defs) != 1 or other:
        raise EditError("malformed_block", "the block must hold imports, constants and exactly "
                                           f"one `def` (found {len(defs)} functions and "
                                           f"{len(other)} other statements)")
    return imports, consts, defs[0]  # type: ignore[return-value]


def functions_of(source: str) -> dict[str, list[ast.FunctionDef]]:
    """Every function of the program by name, nested ones included, in source order."""
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.setdefault(node.name, []).append(node)  # type: ignore[arg-type]
    return found


def apply_function(source: str, code: str) -> str:
    """`source` with the function `code` defines put in place of its namesake (or `code`
    itself when it is a whole program)."""
    source, code = normalize_newlines(source), normalize_newlines(code)
    tree = parsed_block(code)
    if is_program(tree):
        return code
    imports, consts, fn = new_function(tree)
    olds = functions_of(source).get(fn.name, [])
    if not olds:
        names = ", ".join(sorted(functions_of(source))) or "none"
        raise EditError("unknown_function", f"the program has no function {fn.name!r} "
                                            f"(its functions: {names})")
    if len(olds) > 1:
        raise EditError("ambiguous_search", f"the program defines {fn.name!r} "
                                            f"{len(olds)} times")
    old = olds[0]
    lines = source.split("\n")
    start = min([old.lineno, *(d.lineno for d in old.decorator_list)]) - 1
    code_lines = code.rstrip("\n").split("\n")
    body = code_lines[_first_def_line(code_lines, fn):]
    indented = [(" " * old.col_offset + line) if line.strip() else "" for line in body]
    lines[start:old.end_lineno] = indented
    new = _with_constants("\n".join(lines), [_text(code_lines, c) for c in consts], consts)
    return _with_imports(new, [ast.unparse(i) for i in imports])


def _text(lines: list[str], node: ast.stmt) -> str:
    return "\n".join(lines[node.lineno - 1:node.end_lineno])


def _with_constants(source: str, texts: list[str], consts: list[ast.Assign]) -> str:
    """Each constant replaces the module-level assignment of its name, or goes before the
    module's first function or class."""
    for text, const in zip(texts, consts, strict=True):
        name = const.targets[0].id  # type: ignore[attr-defined]
        tree = ast.parse(source)
        lines = source.split("\n")
        old = [n for n in tree.body if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in n.targets)]
        if old:
            lines[old[0].lineno - 1:old[0].end_lineno] = text.split("\n")
        else:
            first = next((n.lineno - 1 for n in tree.body if isinstance(
                n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)), len(lines))
            lines[first:first] = [*text.split("\n"), "", ""]
        source = "\n".join(lines)
    return source


def _first_def_line(code_lines: list[str], fn: ast.FunctionDef) -> int:
    """Index of the function's first line (its first decorator) in the block's lines."""
    return min([fn.lineno, *(d.lineno for d in fn.decorator_list)]) - 1


def _with_imports(source: str, imports: list[str]) -> str:
    """`source` with each import line not already in it added after its last top-level one."""
    present = {line.strip() for line in source.split("\n")}
    missing = [i for i in imports if i not in present]
    if not missing:
        return source
    tree = ast.parse(source)
    last = max((n.end_lineno or n.lineno for n in tree.body
                if isinstance(n, ast.Import | ast.ImportFrom)), default=0)
    lines = source.split("\n")
    return "\n".join(lines[:last] + missing + lines[last:])


FOCUS_UNFIT = ("the `function` edit format (--edit-format) rewrites one function of the harness, "
               "and this one has none to rewrite: it is only a compiled `graph` (no "
               "build_graph, no add_node functions); use --edit-format whole_program or "
               "search_replace")
"""Why focused edits do not fit a module that is only a compiled graph, as one line."""


def focus_targets(source: str) -> list[str]:
    """The functions focused edits rewrite, one per candidate in turn: the graph's node
    functions, else `build_graph` itself. `ValueError` (`FOCUS_UNFIT`) for a module that is
    only a compiled `graph` (`graph = create_react_agent(...)`, as langgraph.json names one):
    asked for `build_graph`, a Proposer would write a function the program does not have.
    Source that does not parse is left to the judge, which names the line."""
    try:
        nodes = node_functions(source)
        defined = functions_of(source)
    except SyntaxError:
        return ["build_graph"]
    if nodes:
        return nodes
    if "build_graph" in defined:
        return ["build_graph"]
    raise ValueError(FOCUS_UNFIT)


def node_functions(source: str) -> list[str]:
    """The functions the graph runs as nodes (`add_node("name", fn)` or `add_node(fn)`), in
    the order they are added: what focused edits rewrite, one at a time."""
    defined = functions_of(source)
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_node" and node.args):
            fn = node.args[-1]
            if isinstance(fn, ast.Name) and fn.id in defined and fn.id not in names:
                names.append(fn.id)
    return names
