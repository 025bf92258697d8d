"""Chat with tool calls over a text-only Solver: prompted tool calling.

`tools.chat_model()` in a worker sends OpenAI-style messages (with tool calls and tool
results) and the bound tools' schemas. The model layer passes text, and small local models
have no native function calling, so the tools are described in a system message with one fixed
call format, earlier calls and results are written back as text, and calls are parsed out of
the reply. A reply that names no known tool is a plain answer.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from typing import Any

from harness_learning.harnesses.contract import ToolInputError

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
_CALL_BLOCK = re.compile(re.escape(CALL_OPEN) + r"\s*(.*?)\s*(?:" + re.escape(CALL_CLOSE) + r"|$)",
                         re.DOTALL)
_ids = itertools.count(1)


def tool_instructions(tools: list[dict[str, Any]], tool_choice: object) -> str:
    """The system message that offers `tools` (OpenAI tool schemas)."""
    lines = ["You can call these tools:"]
    for tool in tools:
        fn = tool.get("function", tool)
        lines.append(f"- {fn.get('name')}: {fn.get('description', '')} Arguments (JSON schema): "
                     f"{json.dumps(fn.get('parameters', {}), sort_keys=True)}")
    lines.append(f"To call a tool, reply with only {CALL_OPEN}{{\"name\": TOOL, \"arguments\": "
                 f"{{...}}}}{CALL_CLOSE}. You then get its result and can call another tool "
                 "or reply with your final answer as plain text.")
    forced = _forced(tool_choice)
    if forced:
        lines.append(f"You must call {forced} now.")
    return "\n".join(lines)


def _forced(tool_choice: object) -> str | None:
    if tool_choice in ("any", "required"):
        return "one of the tools"
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none"):
        return f"the tool {tool_choice}"
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        return f"the tool {name}" if name else None
    return None


def to_text_messages(messages: object, tools: list[dict[str, Any]] | None,
                     tool_choice: object = None) -> list[dict[str, str]]:
    """OpenAI-style chat messages as role/content text a plain chat template accepts."""
    if not isinstance(messages, list) or not messages:
        raise ToolInputError("chat needs a non-empty list of messages")
    out: list[dict[str, str]] = []
    if tools:
        out.append({"role": "system", "content": tool_instructions(tools, tool_choice)})
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ToolInputError(f"chat messages[{i}] needs a 'role'")
        role, content = m["role"], _text(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            calls = [f"{CALL_OPEN}{json.dumps(_call_json(c))}{CALL_CLOSE}" for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": "\n".join(filter(None, [content, *calls]))})
        elif role == "tool":
            out.append({"role": "user", "content": f"Result of tool {m.get('name') or ''} "
                                                   f"(call {m.get('tool_call_id', '?')}): {content}"})
        elif role in ("system", "user", "assistant"):
            out.append({"role": role, "content": content})
        else:
            raise ToolInputError(f"chat messages[{i}] has an unknown role {role!r}")
    return out


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # content blocks: keep the text ones
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def _call_json(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    args = fn.get("arguments", "{}")
    with contextlib.suppress(ValueError):
        args = json.loads(args) if isinstance(args, str) else args
    return {"name": fn.get("name"), "arguments": args}


def parse_reply(text: str, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """`{"content", "tool_calls": [{"id", "name", "args"}]}` from a reply: calls in the fixed
    format (or a bare JSON object naming a known tool) become tool calls."""
    known = {(t.get("function", t)).get("name") for t in tools or []}
    if not known:
        return {"content": text, "tool_calls": []}
    calls = []
    for raw in _CALL_BLOCK.findall(text) or [text.strip()]:
        call = _decode_call(raw, known)
        if call is not None:
            calls.append({"id": f"call_{next(_ids)}", **call})
    content = _CALL_BLOCK.sub("", text).strip() if calls else text
    return {"content": content, "tool_calls": calls}


def _decode_call(raw: str, known: set[Any]) -> dict[str, Any] | None:
    start = raw.find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(raw, start)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("name") not in known:
        return None
    args = data.get("arguments", data.get("args", {}))
    return {"name": data["name"], "args": args if isinstance(args, dict) else {}}
