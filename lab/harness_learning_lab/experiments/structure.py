"""Program-structure statistics of harness versions, by static analysis (ast) of their source.

Four detectors, each a documented rule over the syntax tree; none runs the code. They share a
small flow analysis: a value is *passage-derived* when it comes from `tools.search(...)` (through
assignments, loops, comprehensions, `list.append`, helper calls and LangGraph state keys that a
node returns and another reads), and *Solver-derived* likewise from `tools.llm(...)`. A
`tools.llm(...)` result is never passage-derived: what the Solver writes about passages is a
summary, not the passages. The analysis is flow-insensitive and may over- or under-count exotic
programs (dynamic attribute access, `exec`, state keys built at run time); the rules are:

- `raw_passages`: a `tools.llm` call whose result flows (through local assignments, not through
  another call's prompt) into a returned `answer` value has a passage-derived argument: the
  answering call sees raw passages, not only summaries.
- `extra_hop`: the number of `tools.search` call sites, plus one if any of them sits in a loop
  (`for`/`while`, or a graph node on a cycle), exceeds the run's seed's.
- `research_on_absent`: a test (`if`, `while`, conditional expression) contains a membership
  comparison (`in` / `not in`) with a passage-derived operand and a non-constant other operand,
  and a branch of it calls `tools.search` (directly or through a helper) or routes (returns a
  node name) to a graph node that does.
- `code_loop`: `tools.python` runs Solver-derived code, and the call sits in a loop: a
  `for`/`while` of its function, or a graph node on a cycle of the LangGraph graph (edges from
  `add_edge` and `add_conditional_edges`, whose targets are the path map or the string constants
  the router returns); or the program calls the interpreter block (`with_interpreter`,
  `interpreter_loop`), which runs such a loop. Which form a loop takes, and whether the
  error goes back to the Solver, is `code_loop.code_loop_form`.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass

DETECTORS = ("raw_passages", "extra_hop", "research_on_absent", "code_loop")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(frozen=True)
class Structure:
    """What the detectors found in one source (None fields: the source does not parse)."""

    raw_passages: bool
    search_hops: int
    research_on_absent: bool
    code_loop: bool

    def flags(self, seed_hops: int) -> dict[str, bool]:
        return {"raw_passages": self.raw_passages, "extra_hop": self.search_hops > seed_hops,
                "research_on_absent": self.research_on_absent, "code_loop": self.code_loop}

    def to_dict(self) -> dict:
        return asdict(self)


def tool_name(node: ast.AST) -> str | None:
    """`llm`, `search` or `python` for a call `tools.<name>(...)`, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "tools"):
        return node.func.attr
    return None


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _targets(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


class Flow:
    """Which names, state keys and helper functions carry values derived from `tools.<source>`."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.source = source
        self.keys: set[str] = set()
        self.helpers: set[str] = set()
        self.funcs = [f for f in ast.walk(tree) if isinstance(f, _FUNCS)]
        self.names: dict[ast.AST, set[str]] = {f: set() for f in self.funcs}
        self.names[tree] = set()
        for _ in range(5):  # fixpoint: each pass can only add names, keys and helpers
            before = self._size()
            for scope in [tree, *self.funcs]:
                self._scan(scope)
            if self._size() == before:
                break

    def _size(self) -> int:
        return len(self.keys) + len(self.helpers) + sum(len(v) for v in self.names.values())

    def _own(self, scope: ast.AST):
        """Nodes of `scope`, not descending into nested functions."""
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, _FUNCS):
                stack.extend(ast.iter_child_nodes(node))

    def _scan(self, scope: ast.AST) -> None:
        names = self.names[scope]
        for node in self._own(scope):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                if self.derived(node.value, scope):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        names.update(_targets(t))
                        key = _str(t.slice) if isinstance(t, ast.Subscript) else None
                        if key:
                            self.keys.add(key)
            elif isinstance(node, _LOOPS[:2]) and self.derived(node.iter, scope):
                names.update(_targets(node.target))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("append", "extend", "insert", "update")
                  and isinstance(node.func.value, ast.Name)
                  and any(self.derived(a, scope) for a in node.args)):
                names.add(node.func.value.id)
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if _str(k) and self.derived(v, scope):
                        self.keys.add(_str(k))
            elif (isinstance(node, ast.Return) and node.value is not None
                  and isinstance(scope, _FUNCS) and self.derived(node.value, scope)):
                self.helpers.add(scope.name)

    def derived(self, expr: ast.AST, scope: ast.AST, extra: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` (inside `scope`) may hold a value derived from the source tool."""
        tool = tool_name(expr)
        if tool is not None:
            return tool == self.source
        if isinstance(expr, ast.Name):
            return expr.id in extra or expr.id in self.names.get(scope, ())
        if isinstance(expr, ast.Subscript) and _str(expr.slice) in self.keys:
            return True
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name) and expr.func.id in self.helpers:
                return True
            if (isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" and expr.args
                    and _str(expr.args[0]) in self.keys):
                return True
        if isinstance(expr, _COMPS):
            local = set(extra)
            for gen in expr.generators:
                if self.derived(gen.iter, scope, frozenset(local)):
                    local.update(_targets(gen.target))
            extra = frozenset(local)
        return any(self.derived(c, scope, extra) for c in ast.iter_child_nodes(expr))


def _graph_cycle_nodes(tree: ast.Module) -> set[str]:
    """Names of the functions bound to graph nodes that lie on a cycle of the graph."""
    funcs = {f.name: f for f in ast.walk(tree) if isinstance(f, _FUNCS)}
    node_func: dict[str, str] = {}
    edges: dict[str, set[str]] = {}
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        method, args = call.func.attr, call.args
        if method == "add_node" and args:
            name = _str(args[0])
            func = args[-1] if len(args) > 1 else args[0]
            if isinstance(func, ast.Name):
                node_func[name or func.id] = func.id
        elif method == "add_edge" and len(args) == 2:
            edges.setdefault(_ref(args[0]), set()).add(_ref(args[1]))
        elif method == "add_conditional_edges" and len(args) >= 2:
            edges.setdefault(_ref(args[0]), set()).update(_route_targets(args, funcs))
    on_cycle: set[str] = set()
    for start in node_func:
        seen, stack = set(), list(edges.get(start, ()))
        while stack:
            node = stack.pop()
            if node == start:
                on_cycle.add(node_func[start])
                break
            if node not in seen:
                seen.add(node)
                stack.extend(edges.get(node, ()))
    return on_cycle


def _ref(node: ast.AST) -> str:
    """A graph node named by a string, or by a name such as START / END (kept apart)."""
    if _str(node):
        return _str(node)
    return f"<{node.id}>" if isinstance(node, ast.Name) else "<?>"


def _route_targets(args: list[ast.expr], funcs: dict[str, ast.AST]) -> set[str]:
    if len(args) >= 3 and isinstance(args[2], ast.Dict):
        return {s for v in args[2].values if (s := _str(v))}
    if len(args) >= 3 and isinstance(args[2], ast.List | ast.Tuple):
        return {s for v in args[2].elts if (s := _str(v))}
    router = funcs.get(args[1].id) if isinstance(args[1], ast.Name) else None
    return _returned_strings(router) if router is not None else set()


def _returned_strings(func: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            out.update(s for n in ast.walk(node.value) if (s := _str(n)))
    return out


def _funcs_calling(tree: ast.Module, tool: str) -> set[str]:
    return {f.name for f in ast.walk(tree) if isinstance(f, _FUNCS)
            and any(tool_name(n) == tool for n in ast.walk(f))}


def _in_loop(func: ast.AST, target: ast.AST) -> bool:
    """Whether `target` sits inside a for/while loop of `func` (nested functions excluded)."""
    for loop in ast.walk(func):
        if isinstance(loop, _LOOPS) and any(n is target for n in ast.walk(loop)):
            return True
    return False


def _enclosing(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    """Each node's innermost enclosing function (or the module)."""
    out: dict[ast.AST, ast.AST] = {}

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            out[child] = scope
            visit(child, child if isinstance(child, _FUNCS) else scope)

    visit(tree, tree)
    return out


def _answers_with(func: ast.AST, call: ast.Call) -> bool:
    """Whether `func` returns an `answer` key whose value is `call`'s result (through local
    assignments, not through the prompt of another `tools.llm` call)."""
    names: set[str] = set()

    def feeds(expr: ast.AST) -> bool:
        if expr is call:
            return True
        if tool_name(expr) == "llm" or isinstance(expr, _FUNCS):
            return False
        if isinstance(expr, ast.Name):
            return expr.id in names
        return any(feeds(c) for c in ast.iter_child_nodes(expr))

    assigns = [n for n in ast.walk(func) if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
               and n.value is not None]
    for _ in range(4):
        for node in assigns:
            if feeds(node.value):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(_targets(t))
    return any(isinstance(n, ast.Dict) and any(_str(k) == "answer" and feeds(v)
                                               for k, v in zip(n.keys, n.values, strict=True))
               for n in ast.walk(func))


def analyze(source: str) -> Structure | None:
    """The structure of one harness source; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    scope_of = _enclosing(tree)
    passages, solver = Flow(tree, "search"), Flow(tree, "llm")
    cycle = _graph_cycle_nodes(tree)
    calls = [n for n in ast.walk(tree) if tool_name(n) is not None]

    def looped(call: ast.AST) -> bool:
        scope = scope_of[call]
        return _in_loop(scope, call) or getattr(scope, "name", None) in cycle

    raw = any(tool_name(c) == "llm" and _answers_with(scope_of[c], c)
              and any(passages.derived(a, scope_of[c]) for a in [*c.args, *c.keywords])
              for c in calls)
    searches = [c for c in calls if tool_name(c) == "search"]
    hops = len(searches) + int(any(looped(c) for c in searches))
    code = any(tool_name(c) == "python" and looped(c)
               and any(solver.derived(a, scope_of[c]) for a in [*c.args, *c.keywords])
               for c in calls) or calls_interpreter_block(tree)
    return Structure(raw, hops, _researches(tree, passages, scope_of), code)


INTERPRETER_BLOCKS = frozenset({"with_interpreter", "interpreter_loop"})
BLOCKS_MODULE = "harness_learning.harnesses.blocks"


def imports_blocks(tree: ast.Module) -> bool:
    """Whether the source imports anything from the blocks package."""
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith(BLOCKS_MODULE)
               or isinstance(n, ast.Import) and any(a.name.startswith(BLOCKS_MODULE)
                                                    for a in n.names)
               for n in ast.walk(tree))


def calls_interpreter_block(tree: ast.Module) -> bool:
    """Whether the source imports from the blocks package and calls its interpreter."""
    return imports_blocks(tree) and any(isinstance(n, ast.Call) and (
        isinstance(n.func, ast.Name) and n.func.id in INTERPRETER_BLOCKS
        or isinstance(n.func, ast.Attribute) and n.func.attr in INTERPRETER_BLOCKS)
        for n in ast.walk(tree))


def _researches(tree: ast.Module, passages: Flow, scope_of: dict) -> bool:
    searchers = _funcs_calling(tree, "search")
    node_funcs = _node_functions(tree)
    for test_node in ast.walk(tree):
        if not isinstance(test_node, ast.If | ast.While | ast.IfExp):
            continue
        scope = scope_of[test_node]
        if not _membership_on_passages(test_node.test, passages, scope):
            continue
        branches = [*_as_list(test_node.body), *_as_list(test_node.orelse)]
        for branch in branches:
            for n in ast.walk(branch):
                if tool_name(n) == "search":
                    return True
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in searchers:
                    return True
                target = _str(n.value) if isinstance(n, ast.Return) and n.value is not None else (
                    _str(n) if isinstance(test_node, ast.IfExp) else None)
                if target and node_funcs.get(target) in searchers:
                    return True
    return False


def _as_list(part) -> list:
    return part if isinstance(part, list) else [part]


def _membership_on_passages(test: ast.AST, passages: Flow, scope: ast.AST) -> bool:
    for cmp in ast.walk(test):
        if not isinstance(cmp, ast.Compare) or not any(isinstance(o, ast.In | ast.NotIn)
                                                      for o in cmp.ops):
            continue
        operands = [cmp.left, *cmp.comparators]
        extra = frozenset(_comprehension_targets(test, passages, scope))
        if (any(passages.derived(o, scope, extra) for o in operands)
                and any(not isinstance(o, ast.Constant) and not passages.derived(o, scope, extra)
                        for o in operands)):
            return True
    return False


def _comprehension_targets(test: ast.AST, passages: Flow, scope: ast.AST) -> set[str]:
    """Loop variables of comprehensions in `test` that run over passage-derived values."""
    out: set[str] = set()
    for comp in ast.walk(test):
        if isinstance(comp, _COMPS):
            for gen in comp.generators:
                if passages.derived(gen.iter, scope, frozenset(out)):
                    out.update(_targets(gen.target))
    return out


def _node_functions(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for call in ast.walk(tree):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add_node" and call.args):
            func = call.args[-1]
            if isinstance(func, ast.Name):
                out[_str(call.args[0]) or func.id] = func.id
    return out


def share(structures: list[Structure], seed_hops: list[int]) -> dict[str, float | None]:
    """Per detector, the fraction of versions it flags (None when there are none)."""
    if not structures:
        return dict.fromkeys(DETECTORS)
    flags = [s.flags(h) for s, h in zip(structures, seed_hops, strict=True)]
    return {d: sum(f[d] for f in flags) / len(flags) for d in DETECTORS}
