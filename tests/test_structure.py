"""The architecture, checked (docs/ARCHITECTURE.md, "Layers"): module size, no import cycle,
the lab apart from the product, imports only going down the layers.

Imports are read from the source (every `import` statement, at module level or inside a
function: a lazy import is still a dependency), so nothing is imported to check them.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from harness_learning.harnesses.compiler import parse_source

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src" / "harness_learning"
LAB_SRC = REPO / "lab" / "harness_learning_lab"
LAYERS = {"cli": 6, "report": 5, "graphs": 4, "training": 3, "evals": 2, "harnesses": 1, "retrieval": 0}
"""Folder -> rank: a module may import its own layer and the ones below (a lower rank)."""
PACKAGE = "harness_learning"
LAB = "harness_learning_lab"
"""The lab (lab/harness_learning_lab): above the product, which never imports it; its commands
reach the product's command line through an entry point, not an import."""
CLI = f"{PACKAGE}.cli"
LAB_CLI = f"{LAB}.cli"
MAX_LINES = 400


@cache
def modules() -> dict[str, Path]:
    """Every module of the package (src/harness_learning and its layers) and of the lab, by
    dotted name."""
    found: dict[str, Path] = {}
    for package in (SRC, LAB_SRC):
        for path in sorted(package.rglob("*.py")):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: resolve against this module's package
        anchor = module.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join(anchor + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base, *(f"{base}.{a.name}" for a in node.names)]


@cache
def imports() -> dict[str, set[tuple[str, bool]]]:
    """Module -> {(imported project module, at module level?)}. An import of a module's own
    ancestor package is left out: Python imports it first anyway, so it adds no edge."""
    known = modules()
    graph: dict[str, set[tuple[str, bool]]] = {}
    for name, path in known.items():
        tree = parse_source(path.read_text(encoding="utf-8"), str(path))
        top = {id(n) for n in tree.body} | {id(n) for s in tree.body if isinstance(s, ast.If)
                                            for n in s.body}  # `if TYPE_CHECKING:` blocks
        edges: set[tuple[str, bool]] = set()
        for node in ast.walk(tree):
            for target in _targets(node, name, path.name == "__init__.py"):
                if target in known and target != name and not name.startswith(target + "."):
                    edges.add((target, id(node) in top))
        graph[name] = edges
    return graph


def layer(module: str) -> str | None:
    """The product layer a module is in; None for the package root and for the lab."""
    parts = module.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 and parts[1] in LAYERS else None


def test_the_walk_sees_the_whole_package():
    names = modules()
    assert f"{PACKAGE}.graphs.adapter.nodes" in names and f"{PACKAGE}.retrieval.bm25" in names
    assert f"{LAB}.bench.peers" in names and len(names) > 100
    edges = imports()[f"{PACKAGE}.graphs.adapter.run"]
    assert (f"{PACKAGE}.graphs.adapter.context", True) in edges
    assert (f"{PACKAGE}.harnesses.llm.litellm_loop", False) in edges  # a lazy import counts


@pytest.mark.parametrize("root", ["src", "lab", "tests"])
def test_no_module_is_over_400_lines(root):
    long = {str(p.relative_to(REPO)): n for p in (REPO / root).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these modules (over {MAX_LINES} lines): {long}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        part.append(top)
                        if top == node:
                            break
                    if len(part) > 1:
                        out.append(sorted(part))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    graph = {m: {t for t, _ in edges} for m, edges in imports().items()}
    assert _cycles(graph) == []


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_no_product_module_imports_the_lab():
    bad = {m: sorted(t for t, _ in edges if _in(t, LAB))
           for m, edges in imports().items() if not _in(m, LAB)}
    assert {m: t for m, t in bad.items() if t} == {}


def test_only_the_labs_commands_reach_the_cli():
    bad = {m: sorted(t for t, _ in edges if _in(t, CLI))
           for m, edges in imports().items() if _in(m, LAB) and not _in(m, LAB_CLI)}
    assert {m: t for m, t in bad.items() if t} == {}


def test_imports_only_go_down_the_layers():
    bad = {}
    for module, edges in imports().items():
        own = layer(module)
        if own is None:  # the public API (harness_learning/__init__) may name every layer
            continue
        up = sorted(t for t, _ in edges if layer(t) and LAYERS[layer(t)] > LAYERS[own])
        if up:
            bad[module] = up
    assert bad == {}


def test_retrieval_imports_no_other_layer():
    bad = {m: sorted(t for t, _ in e if layer(t) != "retrieval")
           for m, e in imports().items() if layer(m) == "retrieval"}
    assert {m: t for m, t in bad.items() if t} == {}


def test_training_is_imported_only_by_the_cli():
    bad = {m: sorted(t for t, _ in e if layer(t) == "training")
           for m, e in imports().items()
           if layer(m) not in ("training", None) and not m.startswith(CLI + ".")}
    assert {m: t for m, t in bad.items() if t} == {}


def test_docstrings_cite_sections_that_exist_in_the_architecture_doc():
    import re

    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    headings = {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", doc, re.M)}
    cited, stale = {}, []
    for path in [*modules().values(), *(REPO / "tests").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        if "DESIGN" + ".md" in text:
            stale.append(str(path.relative_to(REPO)))
        for m in re.finditer(r'ARCHITECTURE\.md,?\s+"([^"]+)"(?:\s+and\s+"([^"]+)")?', text):
            for section in filter(None, m.groups()):
                cited.setdefault(section, str(path.relative_to(REPO)))
    assert stale == []
    assert len(cited) >= 5
    assert {s: where for s, where in cited.items() if s not in headings} == {}
