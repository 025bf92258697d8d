"""Inlining an operator: the strategy a block applies, written into the harness's own node.

An operator candidate (`harnesses.edits.operators`) wraps the harness in a combinator from
`harness_learning.harnesses.blocks`; a Proposer trained on that text would learn to call the
block, not to write the strategy. `inline_block` undoes the wrapping and rewrites one node
function so that it does the same thing itself: for `interpreter`, the node asks the Solver for
a program, runs it with `tools.python`, and sends the error back in the next prompt, with the
block's own prompts, retry count and limits; when no attempt prints an answer the node's old
body answers, as the block falls back to the wrapped harness. Nothing in the result imports
from the blocks package, so it reads as code a Proposer could write in the `function` format.
`plan` inlines too (the Solver's steps appended to the question the node solves), where one
node alone reads the question; other operators raise `OperatorError`.

The node that receives the loop is the last node function whose returned dict sets `answer`
(the seed's only node): the wrapped harness's answer there is the block's fallback answer.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable

from harness_learning.harnesses.edits.function_edit import apply_function, node_functions
from harness_learning.harnesses.edits.operators import (
    BLOCKS_MODULE,
    BUILD,
    OPERATORS,
    OperatorError,
    shape_of,
)

_INTERPRETER_BODY = '''\
messages = [{{"role": "user", "content": {write}.format(question={state}["question"])}}]
for _attempt in range({tries}):
    reply = {tools}.llm(messages, max_tokens={max_tokens})
    messages.append({{"role": "assistant", "content": reply}})
    found = {code}.search(reply)
    if found is None:
        error = "the reply holds no ```python block"
    else:
        result = {tools}.python(found.group(1), timeout={timeout})
        printed = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        if result.error is None and printed:
            return {{"answer": printed[-1]}}
        error = result.error or "it printed nothing"
    messages.append({{"role": "user", "content": {fix}.format(error=error[-{chars}:])}})
'''


def unwrap(source: str, operator: str) -> str:
    """The harness `apply_operator` wrapped with `operator`: its import of the block and the
    wrapping `build_graph` removed, the renamed builder called `build_graph` again."""
    op = OPERATORS.get(operator)
    if op is None or op.transform is not None:
        raise OperatorError(f"no built-in operator {operator!r} to inline")
    tree = ast.parse(source)
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == op.module
               and [a.name for a in n.names] == [op.block]]
    wrappers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == BUILD
                and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                        and c.func.id == op.block for c in ast.walk(n))]
    if len(imports) != 1 or len(wrappers) != 1:
        raise OperatorError(f"the source is not a harness with operator {operator!r} applied "
                            f"(no `from {op.module} import {op.block}` and wrapping {BUILD})")
    call = next(c for c in ast.walk(wrappers[0]) if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Name) and c.func.id == op.block)
    before = call.args[1].id if len(call.args) > 1 and isinstance(call.args[1], ast.Name) else ""
    lines = source.split("\n")
    for node in sorted([imports[0], wrappers[0]], key=lambda n: -n.lineno):
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        del lines[start - 1:node.end_lineno]
    text = "\n".join(lines).rstrip("\n") + "\n"
    if not before or f"def {before}(" not in text:
        raise OperatorError(f"the wrapped builder {before or '?'} is not defined in the source")
    return _tidy(text.replace(f"def {before}(", f"def {BUILD}(", 1))


def _tidy(source: str) -> str:
    """At most two blank lines in a row (removing the wrapper leaves a gap)."""
    out: list[str] = []
    for line in source.split("\n"):
        if not line.strip() and len(out) >= 2 and not out[-1].strip() and not out[-2].strip():
            continue
        out.append(line)
    return "\n".join(out)


def answering_node(source: str) -> ast.FunctionDef:
    """The last node function whose returned dict sets `answer` (where a strategy goes)."""
    tree = ast.parse(source)
    defined = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    answering = [defined[name] for name in node_functions(source)
                 if any(isinstance(r, ast.Return) and isinstance(r.value, ast.Dict)
                        and any(isinstance(k, ast.Constant) and k.value == "answer"
                                for k in r.value.keys)
                        for r in ast.walk(defined[name]))]
    if not answering:
        raise OperatorError("no node function of the harness returns an `answer`")
    return answering[-1]


def _tools_name(source: str) -> str:
    builder = next(n for n in ast.parse(source).body
                   if isinstance(n, ast.FunctionDef) and n.name == BUILD)
    return builder.args.args[0].arg if builder.args.args else "tools"


def _free(name: str, taken: frozenset[str]) -> str:
    n, candidate = 2, name
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _interpreter(source: str, node: ast.FunctionDef) -> tuple[list[str], str]:
    """(module-level lines: import and constants, the loop's body lines) for `interpreter`."""
    from harness_learning.harnesses.blocks import reasoning

    taken = shape_of(source).names
    write, fix, code = (_free(n, taken) for n in ("WRITE_PROGRAM", "FIX_PROGRAM", "PROGRAM_BLOCK"))
    defaults = _defaults(reasoning.interpreter_loop)
    state = node.args.args[0].arg if node.args.args else "state"
    header = ["import re", "", f"{write} = {reasoning.WRITE_PROGRAM!r}",
              f"{fix} = {reasoning.FIX_PROGRAM!r}",
              f"{code} = re.compile({reasoning.CODE.pattern!r}, re.DOTALL)"]
    body = _INTERPRETER_BODY.format(
        write=write, fix=fix, code=code, state=state, tools=_tools_name(source),
        tries=defaults["retries"] + 1, max_tokens=defaults["max_tokens"],
        timeout=defaults["timeout"], chars=reasoning.ERROR_CHARS)
    return header, body


def _defaults(fn: Callable) -> dict:
    import inspect

    return {k: p.default for k, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


_PLAN_BODY = '''\
steps = {tools}.llm({plan}.format(question={state}["question"]), max_tokens={max_tokens}).strip()
if steps:
    {state} = {{**{state}, "question": f"{{{state}['question']}}\\n\\nSteps to follow:\\n{{steps}}"}}
'''


def _plan(source: str, node: ast.FunctionDef) -> tuple[list[str], str]:
    """`plan`: the Solver writes numbered steps, and the node solves the question with them
    appended. Only where that node alone reads the question (the block changes the question
    every node sees)."""
    from harness_learning.harnesses.blocks import reasoning

    tree = ast.parse(source)
    defined = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    readers = [n for n in node_functions(source) if any(
        isinstance(s, ast.Subscript) and isinstance(s.slice, ast.Constant)
        and s.slice.value == "question" for s in ast.walk(defined[n]))]
    if readers != [node.name]:
        raise OperatorError(f"plan inlines only where one node reads the question "
                            f"(here: {', '.join(readers) or 'none'})")
    plan = _free("PLAN_STEPS", shape_of(source).names)
    state = node.args.args[0].arg if node.args.args else "state"
    body = _PLAN_BODY.format(tools=_tools_name(source), plan=plan, state=state,
                             max_tokens=_defaults(reasoning.plan_steps)["max_tokens"])
    return [f"{plan} = {reasoning.PLAN_STEPS!r}"], body


INLINERS: dict[str, Callable[[str, ast.FunctionDef], tuple[list[str], str]]] = {
    "interpreter": _interpreter,
    "plan": _plan,
}
"""Operator name -> what writes its strategy into a node (module lines, body lines)."""


def inlined_function(source: str, operator: str) -> tuple[str, str]:
    """(the harness before `operator` was applied, the `function`-format code of the answering
    node rewritten with the strategy inline): what a Proposer's focused edit would hold."""
    if operator not in INLINERS:
        raise OperatorError(f"operator {operator!r} has no inliner (known: "
                            f"{', '.join(INLINERS)})")
    parent = unwrap(source, operator)
    node = answering_node(parent)
    header, loop = INLINERS[operator](parent, node)
    old = textwrap.dedent("\n".join(parent.split("\n")[node.lineno - 1:node.end_lineno]))
    old_lines = old.split("\n")
    first = node.body[0]
    skip_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str) and len(node.body) > 1
    anchor = (node.body[1] if skip_doc else first).lineno - node.lineno
    indent = " " * (first.col_offset - node.col_offset)
    loop_lines = [indent + line if line else "" for line in loop.rstrip("\n").split("\n")]
    function = "\n".join(old_lines[:anchor] + loop_lines + old_lines[anchor:])
    return parent, "\n".join(header) + "\n\n\n" + function.rstrip("\n") + "\n"


def inline_block(source: str, operator: str) -> str:
    """`source` (a harness `apply_operator` wrapped with `operator`) with the strategy written
    into its answering node instead: no import from `harness_learning.harnesses.blocks`."""
    parent, code = inlined_function(source, operator)
    out = apply_function(parent, code)
    if BLOCKS_MODULE in out and BLOCKS_MODULE not in parent:
        raise OperatorError(f"inlining {operator!r} left an import of {BLOCKS_MODULE}")
    return out
