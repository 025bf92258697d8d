"""The worker-side chat model and tools, against a scripted bridge `call` (control flow; the
sandboxed and real-model paths are in sandbox/test_user_tools_bridge.py)."""

from __future__ import annotations

import json

from typing_extensions import TypedDict

from harness_learning.harnesses.chat_tools import parse_reply
from harness_learning.harnesses.sandbox.chat_bridge import BridgeChatModel, bridge_tools


class Total(TypedDict):
    """A total price."""

    euros: float


def scripted(reply_text: str):
    seen = []

    def call(tool, args):
        seen.append((tool, args))
        if tool == "chat":
            return parse_reply(reply_text, args["tools"])
        return {"echo": args}
    return call, seen


def test_with_structured_output_goes_through_a_forced_tool_call():
    call, seen = scripted('<tool_call>{"name": "Total", "arguments": {"euros": 1.2}}</tool_call>')
    model = BridgeChatModel(call=call).with_structured_output(Total)
    assert model.invoke("3 apples at 0.40?") == {"euros": 1.2}
    tool, args = seen[0]
    assert tool == "chat" and args["tools"][0]["function"]["name"] == "Total"
    assert args["tool_choice"] not in (None, "auto", "none")  # the schema must be called


def test_bound_tools_and_params_reach_the_bridge():
    call, seen = scripted("plain answer")
    model = BridgeChatModel(call=call, params={"max_tokens": 9})
    out = model.bind_tools([Total]).invoke("hi", stop=["\n"])
    assert out.content == "plain answer" and out.tool_calls == []
    args = seen[0][1]
    assert args["params"] == {"max_tokens": 9, "stop": ["\n"]}
    assert args["messages"] == [{"role": "user", "content": "hi"}]


def test_langchain_tools_call_the_parent_with_their_schema():
    call, seen = scripted("")
    spec = {"name": "lookup", "description": "Find.", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
    (tool,) = bridge_tools([spec], call)
    assert tool.name == "lookup" and json.loads(tool.invoke({"q": "x"})) == {
        "echo": {"name": "lookup", "args": {"q": "x"}}}
    assert seen == [("tool", {"name": "lookup", "args": {"q": "x"}})]
