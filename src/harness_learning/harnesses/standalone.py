"""A harness as a standalone LangGraph file (`harness-learn export --standalone`).

An adopted version often imports building blocks (`from harness_learning.harnesses.blocks
import with_interpreter`): that file runs only where this package is installed. Here each
imported block, and every block definition it uses in turn, is copied in place of the import
(from `harnesses/blocks/{qa,reasoning,compose}.py`, the module prefixes `qa.` and `reasoning.`
dropped), and `harnesses.standalone_tools` is appended: the `tools` object over a chat model,
code runner, search and tools you pass, and `make_graph(chat_model, ...)`. The result imports
only the standard library, LangGraph and langchain-core (`imported_roots` checks it), so a
reader sees the whole strategy in one file. A harness importing any other part of the package
cannot be made standalone and is refused by `StandaloneError`.
"""

from __future__ import annotations

import ast
from importlib import resources

BLOCKS = "harness_learning.harnesses.blocks"
BLOCK_MODULES = ("qa", "reasoning", "compose")
"""In dependency order: compose uses qa and reasoning, so their definitions come first."""
RUNTIME_MARKER = "# -- standalone runtime"
ALLOWED_ROOTS = frozenset({"langgraph", "langchain_core", "typing_extensions", "__future__"})
"""Top-level packages a standalone file may import besides the standard library."""


class StandaloneError(ValueError):
    """A harness that cannot be made standalone; the message names the import and its line."""


def standalone_source(source: str) -> str:
    """`source` with the blocks it imports inlined and the standalone runtime appended."""
    tree = ast.parse(source)
    lines = source.split("\n")
    wanted: list[tuple[str, str | None]] = []
    spans: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names]
        if not any(n.split(".")[0] == "harness_learning" for n in names):
            continue
        if not (isinstance(node, ast.ImportFrom) and node in tree.body
                and (node.module == BLOCKS or (node.module or "").startswith(BLOCKS + "."))):
            raise StandaloneError(
                f"line {node.lineno}: `{ast.unparse(node)}` needs this package; only top-level "
                f"imports from {BLOCKS} can be inlined into a standalone file")
        wanted += [(a.name, a.asname) for a in node.names]
        spans.append((node.lineno, node.end_lineno or node.lineno))
    inlined = inlined_blocks(wanted, taken=_top_names(tree)) if wanted else ""
    for i, (start, end) in enumerate(sorted(spans, reverse=True)):
        lines[start - 1:end] = [inlined] if i == len(spans) - 1 else []
    body = "\n".join(lines).rstrip("\n")
    return f"{body}\n\n\n{runtime_source()}"


def runtime_source() -> str:
    """`harnesses/standalone_tools.py` from its marker line on."""
    text = resources.files("harness_learning.harnesses").joinpath(
        "standalone_tools.py").read_text(encoding="utf-8")
    return text[text.index(RUNTIME_MARKER):]


def _top_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _definitions() -> tuple[dict[str, tuple[int, ast.stmt]], list[ast.stmt]]:
    """Every block module's top-level definitions (name -> (order, node)) and its imports."""
    defs: dict[str, tuple[int, ast.stmt]] = {}
    imports: list[ast.stmt] = []
    order = 0
    for module in BLOCK_MODULES:
        text = resources.files(BLOCKS).joinpath(f"{module}.py").read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            order += 1
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports.append(node)
            for name in _top_names(ast.Module(body=[node], type_ignores=[])):
                defs[name] = (order, node)
    return defs, imports


class _Flatten(ast.NodeTransformer):
    """`qa.X` / `reasoning.X` -> `X`, and names taken by the harness -> `_block_X`."""

    def __init__(self, renamed: dict[str, str]) -> None:
        self.renamed = renamed

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in BLOCK_MODULES:
            return ast.copy_location(ast.Name(self.renamed.get(node.attr, node.attr),
                                              node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.renamed.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.renamed.get(node.name, node.name)
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.renamed.get(node.name, node.name)
        return self.generic_visit(node)


def _uses(node: ast.stmt, defs: dict[str, tuple[int, ast.stmt]]) -> set[str]:
    found = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    found |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
              and isinstance(n.value, ast.Name) and n.value.id in BLOCK_MODULES}
    return {name for name in found if name in defs}


def inlined_blocks(wanted: list[tuple[str, str | None]], taken: set[str]) -> str:
    """The source of the `wanted` blocks (name, alias) and what they use, with the imports
    they need; a block name the harness defines itself is renamed `_block_NAME`."""
    defs, imports = _definitions()
    unknown = [name for name, _ in wanted if name not in defs]
    if unknown:
        raise StandaloneError(f"{BLOCKS} has no {', '.join(map(repr, unknown))} to inline")
    todo, needed = [name for name, _ in wanted], set()
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += _uses(defs[name][1], defs)
    nodes = sorted({id(defs[n][1]): defs[n] for n in needed}.values(), key=lambda d: d[0])
    renamed = {n: f"_block_{n}" for n in needed if n in taken}
    out = [f"# -- building blocks inlined by harness-learn export --standalone (package {BLOCKS})"]
    out += _imports_used(imports, {n.id for _, node in nodes for n in ast.walk(node)
                                   if isinstance(n, ast.Name)})
    for _, node in nodes:
        out += ["", "", ast.unparse(_Flatten(renamed).visit(_copy(node)))]
    aliases = [f"{alias} = {renamed.get(name, name)}" for name, alias in wanted
               if alias and alias != name]
    if aliases:
        out += ["", *aliases]
    return "\n".join(out) + "\n# -- end of inlined blocks\n"


def _imports_used(imports: list[ast.stmt], used: set[str]) -> list[str]:
    """The blocks' import lines, merged per module, keeping the names the inlined code uses."""
    by_module: dict[str, set[str]] = {}
    plain: set[str] = set()
    for node in imports:
        if _from_package(node):
            continue
        if isinstance(node, ast.ImportFrom) and node.module not in ("__future__", None):
            names = {a.name for a in node.names if (a.asname or a.name) in used}
            if names:
                by_module.setdefault(str(node.module), set()).update(names)
        elif isinstance(node, ast.Import):
            plain |= {a.name for a in node.names if a.name.split(".")[0] in used}
    return [*(f"import {name}" for name in sorted(plain)),
            *(f"from {mod} import {', '.join(sorted(names))}"
              for mod, names in sorted(by_module.items()))]


def _from_package(node: ast.stmt) -> bool:
    module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name  # type: ignore[attr-defined]
    return (module or "").split(".")[0] == "harness_learning"


def _copy(node: ast.stmt) -> ast.stmt:
    return ast.parse(ast.unparse(node)).body[0]


def imported_roots(source: str) -> set[str]:
    """The top-level packages `source` imports anywhere (a standalone file's check)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


__all__ = ["ALLOWED_ROOTS", "StandaloneError", "imported_roots", "inlined_blocks",
           "runtime_source", "standalone_source"]
