"""The harness contract (docs/ARCHITECTURE.md, "A harness").

A harness is one Python source file defining `build_graph(tools)` that returns a LangGraph
`StateGraph`. Its input state holds the problem's public fields (`question`, ...); its output
state holds `answer: str`. Harness code reaches the world only through `tools`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness_learning.retrieval.passage import Passage

LINE_LIMIT = 200
"""Default maximum number of source lines of a valid harness."""

TOOL_NAMES = ("llm", "search", "python")
"""The built-in tools every harness may call (and the Proposer's prompt documents)."""
BRIDGE_OPS = (*TOOL_NAMES, "tool", "chat")
"""Every tool name the bridge serves: the built-ins, a user's tool (`tools.call`) and the Solver
as a chat model (`tools.chat_model()`)."""
JUDGE_OP = "judge"
"""The trace entry of an LLM-judge metric's call (`evals.custom.judge_metric`): made by the parent
after the run, never a bridge op, but a model call the run's budgets count like the Solver's."""
SOLVER_OPS = ("llm", "chat", JUDGE_OP)
"""Trace entries that call a model for a problem: the Solver's bridge ops (counted against
`Limits.llm_calls_per_problem`) and the judge metric's calls. Budgets count them all."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What `tools.python` returns: the program's stdout and, if it failed, the error text."""

    stdout: str
    error: str | None = None


class Tools(Protocol):
    """What a harness may call. Inside a sandbox worker each call crosses the bridge."""

    def llm(self, messages_or_prompt: str | list[dict[str, str]], **params: Any) -> str: ...

    def search(self, query: str, k: int = 5) -> list[Passage]: ...

    def python(self, code: str, timeout: float = 10.0) -> ExecResult: ...

    def call(self, name: str, **args: Any) -> Any:
        """A user's own tool, run in the parent; its JSON result (see `harnesses.usertools`)."""
        ...

    def chat_model(self) -> Any:
        """The Solver as a LangChain `BaseChatModel` (with `bind_tools`), for agent graphs."""
        ...

    def langchain_tools(self) -> list[Any]:
        """The user's tools as LangChain tools that call through the bridge."""
        ...


@dataclass(slots=True)
class ToolCall:
    """One recorded bridge call: the unit of an execution trace."""

    tool: str
    args: dict[str, Any]
    result: Any = None
    error: str | None = None
    latency_s: float = 0.0
    tokens: int = 0
    cached: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


class ToolInputError(ValueError):
    """A harness called a tool with arguments it cannot take; the harness sees a ToolError.
    Defined with the contract, so the parent's toolbox and the chat-tool helpers share it
    without importing each other."""


__all__ = ["BRIDGE_OPS", "JUDGE_OP", "LINE_LIMIT", "SOLVER_OPS", "TOOL_NAMES", "ExecResult",
           "Passage", "ToolCall", "ToolInputError", "Tools"]
