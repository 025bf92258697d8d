"""Prompted tool calling over a text-only Solver: how tools are offered, how earlier calls and
results are written back, and how calls are parsed out of a reply."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.chat_tools import parse_reply, to_text_messages
from harness_learning.harnesses.toolbox import ToolInputError

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Find a thing.",
                                           "parameters": {"type": "object"}}}]


def test_tools_are_offered_and_history_becomes_text():
    messages = [{"role": "user", "content": "find x"},
                {"role": "assistant", "content": "",
                 "tool_calls": [{"id": "c1", "function": {"name": "lookup",
                                                          "arguments": '{"q": "x"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "42"}]
    out = to_text_messages(messages, TOOLS, tool_choice="any")
    assert out[0]["role"] == "system" and "- lookup: Find a thing." in out[0]["content"]
    assert "You must call one of the tools now." in out[0]["content"]
    assert out[2] == {"role": "assistant",
                      "content": '<tool_call>{"name": "lookup", "arguments": {"q": "x"}}</tool_call>'}
    assert out[3] == {"role": "user", "content": "Result of tool lookup (call c1): 42"}


def test_calls_are_parsed_only_for_known_tools():
    reply = parse_reply('Let me see. <tool_call>{"name": "lookup", "arguments": {"q": 1}}'
                        '</tool_call>', TOOLS)
    assert reply["content"] == "Let me see."
    assert [(c["name"], c["args"]) for c in reply["tool_calls"]] == [("lookup", {"q": 1})]
    bare = parse_reply('{"name": "lookup", "arguments": {"q": 2}}', TOOLS)
    assert bare["tool_calls"][0]["args"] == {"q": 2}
    assert parse_reply('{"name": "other"}', TOOLS)["tool_calls"] == []
    assert parse_reply("plain answer", None) == {"content": "plain answer", "tool_calls": []}


def test_bad_messages_are_the_harness_fault():
    with pytest.raises(ToolInputError, match="non-empty list of messages"):
        to_text_messages([], TOOLS)
    with pytest.raises(ToolInputError, match="unknown role 'robot'"):
        to_text_messages([{"role": "robot", "content": "x"}], None)
