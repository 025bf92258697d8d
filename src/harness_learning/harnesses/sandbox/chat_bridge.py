"""Worker side: the Solver as a LangChain chat model and the user's tools as LangChain tools,
both crossing the bridge, so an ordinary LangGraph agent (e.g. `create_react_agent`) runs as a
harness. Imports nothing but langchain-core and the standard library (the worker's import
surface); the model calls and tool runs happen in the parent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

if TYPE_CHECKING:
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import LanguageModelInput
    from langchain_core.runnables import Runnable

CHAT_PARAMS = ("temperature", "top_p", "max_tokens", "stop", "seed")


class BridgeChatModel(BaseChatModel):
    """`tools.chat_model()`: each call is one `chat` message to the parent's Solver."""

    call: Callable[[str, dict[str, Any]], Any]
    """The bridge's `call(tool, args)`."""
    params: dict[str, Any] = {}

    @property
    def _llm_type(self) -> str:
        return "harness-bridge"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: object) -> ChatResult:
        params = {**self.params, **{k: kwargs[k] for k in CHAT_PARAMS if k in kwargs}}
        if stop:
            params["stop"] = stop
        reply = self.call("chat", {"messages": convert_to_openai_messages(messages),
                                   "tools": kwargs.get("tools") or [],
                                   "tool_choice": kwargs.get("tool_choice"), "params": params})
        reply = reply if isinstance(reply, dict) else {"content": str(reply), "tool_calls": []}
        calls = [{"name": c["name"], "args": c.get("args") or {}, "id": c.get("id"),
                  "type": "tool_call"} for c in reply.get("tool_calls") or []]
        message = AIMessage(content=str(reply.get("content") or ""), tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
                   *, tool_choice: str | bool | dict[str, Any] | None = None,
                   **kwargs: object) -> Runnable[LanguageModelInput, AIMessage]:
        """Offer `tools` (LangChain tools, functions, pydantic models or schemas) to the Solver."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is True:
            tool_choice = "any"
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)


def bridge_tools(specs: list[dict[str, Any]], call: Callable[[str, dict[str, Any]], Any]
                 ) -> list[BaseTool]:
    """`tools.langchain_tools()`: one LangChain tool per user tool spec; running one sends a
    `tool` message to the parent, which validates the arguments and runs the real tool."""
    made = []
    for spec in specs:
        name = spec["name"]

        def run(_name: str = name, **args: object) -> str:
            result = call("tool", {"name": _name, "args": args})
            return result if isinstance(result, str) else json.dumps(result)

        made.append(StructuredTool(name=name, description=spec.get("description") or name,
                                   args_schema=spec.get("parameters") or {"type": "object",
                                                                          "properties": {}},
                                   func=run))
    return made
