"""The `tools` a harness calls, over objects you pass: the part `export --standalone` appends
to an exported harness, so the file runs with LangGraph and langchain-core alone.

This module imports only the standard library and langchain-core: its source, from the
marker line on, is copied into the exported file as it is (`harnesses.standalone`). Inside the
project a harness's calls cross the sandbox bridge to the Solver; here they go to the chat
model you give. The file never runs model-written code itself: `tools.python` calls the
code-running function you pass (a sandbox of yours), and refuses without one.
"""

# -- standalone runtime (copied into exported files from here on) --------------------------
import dataclasses as _dataclasses
from collections.abc import Callable as _Callable
from collections.abc import Sequence as _Sequence
from typing import Any as _Any


@_dataclasses.dataclass(frozen=True)
class ExecResult:
    """What `tools.python` returns: the program's stdout and, if it failed, the error text."""

    stdout: str
    error: str | None = None


class MissingTool(RuntimeError):
    """The harness called a tool this file was not given."""


def _text(content: _Any) -> str:
    """A chat reply's text: its string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts = [b.get("text", "") if isinstance(b, dict) else str(b) for b in content or []]
    return "".join(parts)


def _exec_result(value: _Any) -> ExecResult:
    """Your runner's answer as an ExecResult: one already, a (stdout, error) pair, or stdout."""
    if isinstance(value, ExecResult):
        return value
    if hasattr(value, "stdout"):
        return ExecResult(str(value.stdout), getattr(value, "error", None))
    if isinstance(value, tuple) and len(value) == 2:
        return ExecResult(str(value[0]), None if value[1] is None else str(value[1]))
    return ExecResult(str(value))


class StandaloneTools:
    """The harness's `tools`: `llm` and `chat_model` are your chat model (any langchain-core
    `BaseChatModel`); `python`, `search` and `call` are the functions and tools you pass."""

    def __init__(self, chat_model: _Any, *, python: _Callable[..., _Any] | None = None,
                 search: _Callable[..., _Any] | None = None, tools: _Sequence[_Any] = ()):
        self._model, self._python, self._search = chat_model, python, search
        self._tools = {getattr(t, "name", getattr(t, "__name__", str(t))): t for t in tools}

    def llm(self, messages_or_prompt: _Any, **params: _Any) -> str:
        messages = ([{"role": "user", "content": messages_or_prompt}]
                    if isinstance(messages_or_prompt, str) else list(messages_or_prompt))
        return _text(self._model.invoke(messages, **params).content)

    def python(self, code: str, timeout: float = 10.0) -> ExecResult:
        if self._python is None:
            raise MissingTool("this harness runs programs with tools.python: pass python=FN "
                              "(FN(code, timeout) -> (stdout, error), run in a sandbox of "
                              "yours) to make_graph; this file never runs them itself")
        return _exec_result(self._python(code, timeout))

    def search(self, query: str, k: int = 5) -> list[_Any]:
        if self._search is None:
            raise MissingTool("this harness calls tools.search: pass search=FN "
                              "(FN(query, k) -> passages with .title and .text) to make_graph")
        return list(self._search(query, k))

    def call(self, name: str, **args: _Any) -> _Any:
        if name not in self._tools:
            raise MissingTool(f"this harness calls the tool {name!r}: pass it in tools=[...] "
                              f"to make_graph (given: {', '.join(self._tools) or 'none'})")
        tool = self._tools[name]
        return tool.invoke(args) if hasattr(tool, "invoke") else tool(**args)

    def chat_model(self) -> _Any:
        return self._model

    def langchain_tools(self) -> list[_Any]:
        return list(self._tools.values())


def make_graph(chat_model: _Any, *, python: _Callable[..., _Any] | None = None,
               search: _Callable[..., _Any] | None = None, tools: _Sequence[_Any] = ()) -> _Any:
    """The harness compiled over your chat model (and code runner, search, tools):
    `make_graph(model).invoke({"question": ...})["answer"]`."""
    builder = globals().get("build_graph")  # the harness's; or its compiled module `graph`
    graph = globals()["graph"] if builder is None else builder(
        StandaloneTools(chat_model, python=python, search=search, tools=tools))
    return graph if hasattr(graph, "invoke") else graph.compile()  # compiled already, or not
