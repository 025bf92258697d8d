"""`tools` for a reviewed harness compiled in this process (`load_harness(...,
sandboxed=False, reviewed=True)`): the same parent-side Toolbox the sandbox bridge serves,
called synchronously through the model layer's background loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from harness_learning.harnesses.contract import ExecResult
    from harness_learning.harnesses.sandbox.chat_bridge import BridgeChatModel
    from harness_learning.harnesses.sandbox.records import ToolReply
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning.retrieval.passage import Passage


class InProcessTools:
    """`tools` for a reviewed harness compiled in this process: the same Toolbox as the
    sandbox bridge, called synchronously through the background loop."""

    def __init__(self, toolbox: Toolbox) -> None:
        self._toolbox = toolbox

    def _call(self, coro: Coroutine[Any, Any, ToolReply]) -> Any:
        if threading.current_thread().name == "model-client-loop":
            raise RuntimeError("a harness tool was called on the model client's own loop")
        from harness_learning.harnesses.llm.litellm_loop import background_loop

        # the model clients' own loop (the one embed's sandboxed runners use too)
        return asyncio.run_coroutine_threadsafe(coro, background_loop().loop).result().result

    def llm(self, messages_or_prompt: str | list[dict[str, str]], **params: object) -> str:
        return str(self._call(self._toolbox.llm(messages_or_prompt, params)) or "")

    def search(self, query: str, k: int = 5) -> list[Passage]:
        from harness_learning.retrieval.passage import Passage

        return [Passage.from_dict(r) for r in self._call(self._toolbox.search(query, k)) or []]

    def python(self, code: str, timeout: float = 10.0) -> ExecResult:
        from harness_learning.harnesses.contract import ExecResult

        row = self._call(self._toolbox.python(code, timeout)) or {}
        return ExecResult(str(row.get("stdout", "")), row.get("error"))

    def call(self, name: str, **args: object) -> Any:
        return self._call(self._toolbox.user_tool(name, args))

    def _bridge(self, tool: str, args: dict[str, Any]) -> Any:
        return self._call(self._toolbox.call(tool, args))

    def chat_model(self, **params: object) -> BridgeChatModel:
        from harness_learning.harnesses.sandbox.chat_bridge import BridgeChatModel

        return BridgeChatModel(call=self._bridge, params=params)

    def langchain_tools(self) -> list[BaseTool]:
        from harness_learning.harnesses.sandbox.chat_bridge import bridge_tools

        return bridge_tools(self._toolbox.tool_specs(), self._bridge)
