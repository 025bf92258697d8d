"""Worker side: the `tools` object harness code receives, every call crossing the bridge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness_learning.harnesses.sandbox.chat_bridge import BridgeChatModel


class BridgeCall(Protocol):
    """What `BridgeTools` needs of the worker's bridge (`worker.Bridge`)."""

    def call(self, tool: str, args: dict[str, Any]) -> Any: ...


class BridgeTools:
    """The `tools` object harness code receives inside the worker."""

    def __init__(self, bridge: BridgeCall) -> None:
        self._bridge = bridge
        self._specs: list[dict[str, Any]] = []
        """The user's tools (name, description, schema), sent with the source by the parent."""

    def call(self, name: str, **args: object) -> Any:
        """Run the user's tool `name` in the parent; its JSON result."""
        return self._bridge.call("tool", {"name": name, "args": args})

    def __getattr__(self, name: str) -> Any:
        """`tools.lookup(city="Oslo")` is `tools.call("lookup", city="Oslo")`."""
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda **args: self.call(name, **args)

    def chat_model(self, **params: object) -> BridgeChatModel:
        """The Solver as a LangChain chat model (`bind_tools` included), over the bridge."""
        from harness_learning.harnesses.sandbox.chat_bridge import BridgeChatModel

        return BridgeChatModel(call=self._bridge.call, params=params)

    def langchain_tools(self) -> list:
        """The user's tools as LangChain tools that run in the parent."""
        from harness_learning.harnesses.sandbox.chat_bridge import bridge_tools

        return bridge_tools(self._specs, self._bridge.call)

    def llm(self, messages_or_prompt: str | list[dict[str, str]], **params: object) -> str:
        result = self._bridge.call("llm", {"messages": messages_or_prompt, "params": params})
        return "" if result is None else str(result)

    def search(self, query: str, k: int = 5) -> list:
        from harness_learning.retrieval.passage import Passage

        rows = self._bridge.call("search", {"query": query, "k": k})
        return [Passage.from_dict(row) for row in rows or []]

    def python(self, code: str, timeout: float = 10.0) -> Any:
        from harness_learning.harnesses.contract import ExecResult

        row = self._bridge.call("python", {"code": code, "timeout": timeout}) or {}
        return ExecResult(str(row.get("stdout", "")), row.get("error"))
