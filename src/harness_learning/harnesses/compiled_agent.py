"""A user's own compiled LangGraph agent as a harness: `build_graph(tools)` may return
`create_react_agent(MyChatModel(...), [...])` or any compiled graph, as it is.

Two things make such an agent a harness without rewriting it:

- Its model calls go to the Solver. The agent was built around the user's chat model class
  (a hosted provider's, which cannot be reached from a sandbox and must not be: the run's
  Solver is what is being adapted around). `route_chat_models` makes every chat model other
  than the Solver's own (`tools.chat_model()`) generate through the Solver, whatever its type:
  the call's messages, stop words and bound tools (in any format langchain-core converts to
  OpenAI's) are the Solver's call. The user's class is constructed but never asked.
- Its state meets the harness contract (`question` in, `answer` out). A graph whose input has
  `question` runs as it is; a chat agent (a `messages` state, as `create_react_agent`'s) is
  nested in a three-node graph: the question becomes a user message, the agent runs, and its
  last message's text is the answer.

Worker side: imports langchain-core, LangGraph and the standard library only.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        CallbackManagerForLLMRun,
    )
    from langchain_core.outputs import ChatResult
    from langgraph.pregel import Pregel

    from harness_learning.harnesses.contract import Tools

_route: dict[str, Any] = {}
"""The Solver's chat model every other chat model generates through (this process's tools)."""
_lock = threading.Lock()


class ChatAgentState(TypedDict, total=False):
    question: str
    answer: str
    messages: Annotated[list[AnyMessage], add_messages]


def _solver_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with its bound tools in OpenAI's format (the bridge's)."""
    out = dict(kwargs)
    if out.get("tools"):
        out["tools"] = [convert_to_openai_tool(t) for t in out["tools"]]
    return out


def route_chat_models(solver: BaseChatModel) -> None:
    """From now on in this process, a chat model that is not `solver`'s class generates
    through `solver` (sync and async). Idempotent; a later call moves the route."""
    with _lock:
        _route["solver"] = solver
        if "original" in _route:
            return
        _route["original"] = original = BaseChatModel._generate_with_cache
        _route["aoriginal"] = aoriginal = BaseChatModel._agenerate_with_cache

        def generate(self: BaseChatModel, messages: list[BaseMessage],
                     stop: list[str] | None = None,
                     run_manager: CallbackManagerForLLMRun | None = None,
                     **kwargs: object) -> ChatResult:
            target = _route["solver"]
            if isinstance(self, type(target)):
                return original(self, messages, stop, run_manager, **kwargs)
            return original(target, messages, stop, run_manager, **_solver_kwargs(kwargs))

        async def agenerate(self: BaseChatModel, messages: list[BaseMessage],
                            stop: list[str] | None = None,
                            run_manager: AsyncCallbackManagerForLLMRun | None = None,
                            **kwargs: object) -> ChatResult:
            target = _route["solver"]
            if isinstance(self, type(target)):
                return await aoriginal(self, messages, stop, run_manager, **kwargs)
            return await aoriginal(target, messages, stop, run_manager,
                                   **_solver_kwargs(kwargs))

        BaseChatModel._generate_with_cache = generate  # type: ignore[method-assign]
        BaseChatModel._agenerate_with_cache = agenerate  # type: ignore[method-assign]


def input_keys(compiled: Pregel) -> set[str]:
    """The keys a compiled graph's input takes."""
    schema = compiled.get_input_jsonschema()
    return set(schema.get("properties") or {})


def _ask(state: ChatAgentState) -> dict[str, Any]:
    return {"messages": [HumanMessage(state["question"])]}


def _reply(state: ChatAgentState) -> dict[str, Any]:
    content = state["messages"][-1].content if state.get("messages") else ""
    if not isinstance(content, str):
        content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return {"answer": content.strip()}


def as_harness(compiled: Pregel, tools: Tools, route: bool = True) -> Pregel:
    """`compiled` (a user's compiled graph) as a harness graph over the Solver; raises
    ValueError with one line when its state has neither `question` nor `messages`. `route`:
    send every chat model's calls to the Solver (in a sandbox worker, which runs nothing
    else; never in a user's own process, where their other models must stay theirs)."""
    if route:
        route_chat_models(tools.chat_model())
    keys = input_keys(compiled)
    if "question" in keys:
        return compiled
    if "messages" not in keys:
        raise ValueError(f"build_graph returned a compiled graph whose input takes "
                         f"{', '.join(sorted(keys)) or 'nothing'}: a harness's takes "
                         "`question` (and returns `answer`), a chat agent's `messages`")
    graph = StateGraph(ChatAgentState)
    graph.add_node("ask", _ask)
    graph.add_node("agent", compiled)
    graph.add_node("reply", _reply)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "agent")
    graph.add_edge("agent", "reply")
    graph.add_edge("reply", END)
    return graph.compile()
