"""A user's own tools, served in the parent process behind `tools.call(name, **args)`.

Tools run here, where the user's credentials, databases and network are, never in a sandbox
worker. Accepted: a LangChain `BaseTool`, a typed plain function (its signature and docstring
become the schema and description), a list of those, or a factory (a callable taking no
arguments) returning any of them. Every call's arguments are checked against the tool's schema
here first: a wrong call is the harness's fault and its message shows the schema. Results are
made JSON and capped. A tool declared deterministic (`metadata={"deterministic": True}` on a
`BaseTool`, or a `deterministic = True` attribute on a function) has its results cached.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.sandbox.records import ToolReply

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

MAX_RESULT_CHARS = 20_000
"""Longest JSON text of one tool result handed to a harness (longer ones are cut, as text)."""
RESERVED_NAMES = frozenset({"llm", "search", "python", "call", "chat_model", "langchain_tools"})


class ToolSetupError(ValueError):
    """A tool that cannot be offered (bad object, clashing name): the user's to fix."""


class ToolArgumentError(ValueError):
    """A harness called a tool wrongly (unknown tool, wrong arguments): the harness's fault."""


class UserToolError(RuntimeError):
    """A user's tool raised on a well-formed call: the user's code failed. The harness still
    gets a ToolError (it may recover), and the traced call is marked `user_tool`
    (`sandbox.records.failure_kind`), so runs count and show it instead of hiding it."""


@dataclass
class UserTool:
    """One tool as the bridge serves it."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments (an object schema), as the Proposer and chat models see it."""
    tool: BaseTool
    """The LangChain tool that runs the call."""
    deterministic: bool = False

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "parameters": self.parameters, "deterministic": self.deterministic}


@dataclass
class UserTools:
    """The tools of a run by name, with the cache of the deterministic ones."""

    tools: dict[str, UserTool] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return sorted(self.tools)

    def specs(self) -> list[dict[str, Any]]:
        return [self.tools[n].spec() for n in self.names]

    async def call(self, name: object, args: object) -> ToolReply:
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(self.names) or "none"
            raise ToolArgumentError(f"tools.call: no tool {name!r}; available: {known}")
        if not isinstance(args, dict):
            raise ToolArgumentError(f"tools.call({name!r}): arguments must be keywords")
        checked = validate_args(tool, args)
        key = json.dumps([name, checked], sort_keys=True, default=str)
        if tool.deterministic and key in self.cache:
            return ToolReply(self.cache[key], cached=True, meta={"tool": name})
        try:
            output = await tool.tool.ainvoke(checked)
        except Exception as exc:
            raise UserToolError(f"tool {name!r} raised {last_line(exc)}") from exc
        result, meta = jsonable_capped(output)
        if tool.deterministic:
            self.cache[key] = result
        return ToolReply(result, meta={"tool": name, **meta})

    def describe(self) -> str:
        """The tools' section of the Proposer's prompt: name, description, argument schema."""
        lines = []
        for t in (self.tools[n] for n in self.names):
            params = json.dumps(t.parameters.get("properties", {}), sort_keys=True)
            required = t.parameters.get("required", [])
            lines.append(f"    tools.call({t.name!r}, **args)  (or tools.{t.name}(**args))\n"
                         f"        {t.description}\n        args: {params}; required: "
                         f"{required}" + ("; deterministic (cached)" if t.deterministic else ""))
        return "\n".join(lines)


def last_line(exc: BaseException) -> str:
    """`Type: message` of an exception, its last line only (what a traceback ends with)."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1].strip()}" if lines else type(exc).__name__


def validate_args(tool: UserTool, args: dict[str, Any]) -> dict[str, Any]:
    """`args` checked against the tool's schema: unknown and missing names, then types (via
    the tool's pydantic model where it has one). Raises `ToolArgumentError` with the schema."""
    props = tool.parameters.get("properties", {})
    problems = [f"unknown argument {k!r}" for k in sorted(set(args) - set(props))]
    problems += [f"missing argument {k!r}" for k in tool.parameters.get("required", [])
                 if k not in args]
    model = getattr(tool.tool, "args_schema", None)
    if not problems and isinstance(model, type) and hasattr(model, "model_validate"):
        try:
            model.model_validate(args)
        except Exception as exc:  # pydantic's ValidationError: one line per field
            errors = getattr(exc, "errors", lambda: [])()
            problems += [f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}"
                         for e in errors] or [str(exc)]
    if problems:
        raise ToolArgumentError(
            f"tools.call({tool.name!r}): {'; '.join(problems)}. Schema: "
            f"{json.dumps(tool.parameters, sort_keys=True)}")
    return dict(args)


def jsonable_capped(output: object) -> tuple[Any, dict[str, Any]]:
    """A tool's output as JSON data (messages give their content; other objects their
    `model_dump()` or text), cut to `MAX_RESULT_CHARS` of JSON text."""
    content = getattr(output, "content", None)
    if content is not None and hasattr(output, "type"):
        output = content
    if hasattr(output, "model_dump"):
        output = output.model_dump()
    try:
        text = json.dumps(output)
    except (TypeError, ValueError):
        output = str(output)
        text = json.dumps(output)
    if len(text) <= MAX_RESULT_CHARS:
        return output, {}
    shown = output if isinstance(output, str) else text
    return shown[:MAX_RESULT_CHARS], {"truncated_from": len(text)}


def to_user_tools(obj: object, origin: str) -> list[UserTool]:
    """The tools `obj` stands for (see the module docstring)."""
    from langchain_core.tools import BaseTool

    if isinstance(obj, BaseTool):
        return [_wrap(obj)]
    if isinstance(obj, list | tuple):
        return [t for item in obj for t in to_user_tools(item, origin)]
    if callable(obj):
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            params = {"?": None}
        if not params:  # a factory
            made = obj()
            if callable(made) and not isinstance(made, BaseTool | list | tuple):
                return [_from_function(made)]
            return to_user_tools(made, origin)
        return [_from_function(obj)]
    raise ToolSetupError(f"tool {origin}: a {type(obj).__name__} is not a LangChain tool, a typed "
                         "function, a list of them or a factory returning them")


def _from_function(fn: Callable[..., object]) -> UserTool:
    from langchain_core.tools import StructuredTool

    if not (fn.__doc__ or "").strip():
        raise ToolSetupError(f"tool function {getattr(fn, '__name__', fn)!r} needs a docstring: "
                             "it is the description the harness and the Proposer read")
    kind = "coroutine" if inspect.iscoroutinefunction(fn) else "func"
    tool = StructuredTool.from_function(**{kind: fn})
    wrapped = _wrap(tool)
    wrapped.deterministic = bool(getattr(fn, "deterministic", False))
    return wrapped


def _wrap(tool: BaseTool) -> UserTool:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    function = convert_to_openai_tool(tool)["function"]
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    deterministic = bool((getattr(tool, "metadata", None) or {}).get("deterministic"))
    return UserTool(tool.name, function.get("description") or tool.description or "",
                    parameters, tool, deterministic)


def build_user_tools(items: Iterable[Any], origins: Iterable[str] | None = None) -> UserTools:
    """One registry from several tool objects; names must be identifiers, distinct, and not
    those of the built-in tools."""
    registry = UserTools()
    items = list(items)
    origins = list(origins) if origins is not None else [repr(i)[:60] for i in items]
    for item, origin in zip(items, origins, strict=True):
        for tool in to_user_tools(item, origin):
            if not tool.name.isidentifier() or tool.name in RESERVED_NAMES:
                raise ToolSetupError(f"tool {origin}: the name {tool.name!r} is not usable as "
                                     f"tools.{tool.name}; rename it (reserved: "
                                     f"{', '.join(sorted(RESERVED_NAMES))})")
            if tool.name in registry.tools:
                raise ToolSetupError(f"tool {origin}: two tools are named {tool.name!r}")
            registry.tools[tool.name] = tool
    return registry


BUILT_IN_TOOLS = frozenset({"llm", "search", "python", "chat_model"})
"""Methods of a harness's `tools` that are not user tools (`call`, `langchain_tools` are read
for the names they reach)."""
LANGCHAIN_TOOLS = "langchain_tools()"


def called_tools(source: str) -> list[str]:
    """The user tools a harness source calls, read statically: `tools.NAME(...)`,
    `tools.call("NAME", ...)` and `tools.langchain_tools()` (listed as `LANGCHAIN_TOOLS`: it
    hands an agent every tool given, so none given means an agent with none). `tools` is
    `build_graph`'s first parameter, whatever it is named; a file without one (a compiled
    graph alone) is not read, since a `tools` there is its own object. A name built at run
    time is not seen; the bridge still refuses it when called."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the compiler reports it, with its line
    name = next((node.args.args[0].arg for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef) and node.name == "build_graph"
                 and node.args.args), None)
    if name is None:
        return []
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        if not (isinstance(node, ast.Call) and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name) and func.value.id == name):
            continue
        attr = func.attr
        if attr == "call":
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found[first.value] = None
        elif attr == "langchain_tools":
            found[LANGCHAIN_TOOLS] = None
        elif attr not in BUILT_IN_TOOLS and not attr.startswith("_"):
            found[attr] = None
    return list(found)


def missing_tools(source: str, user_tools: UserTools | None) -> list[str]:
    """The tools `source` calls (`called_tools`) that `user_tools` does not hold."""
    given = set(user_tools.names) if user_tools is not None else set()
    return [n for n in called_tools(source)
            if (not given if n == LANGCHAIN_TOOLS else n not in given)]


def missing_tools_message(missing: list[str], user_tools: UserTools | None) -> str:
    """One line naming the tools a harness calls but was not given, and what was given."""
    named = ", ".join(f"tools.{n}" for n in missing)
    given = ", ".join(user_tools.names) if user_tools is not None and user_tools.names else "none"
    return (f"the harness calls {named}, which {'was' if len(missing) == 1 else 'were'} not "
            f"given (tools given: {given}); pass the tools it calls with --tools (module:attr, "
            "file.py:attr or 'mcp:COMMAND ARGS...')")


def check_tools_given(source: str | None, user_tools: UserTools | None) -> None:
    """Raise `ToolSetupError` when `source` calls a tool it was not given: run without it, the
    harness would fail on every problem, or an agent would run with no tools at all."""
    missing = missing_tools(source, user_tools) if source else []
    if missing:
        raise ToolSetupError(missing_tools_message(missing, user_tools))
