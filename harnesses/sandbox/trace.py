"""Bounded copies of tool arguments and results for the stored trace.

A harness can pass megabytes to a tool (refused past `Limits.tool_arg_bytes`, but anything
below still adds up over hundreds of calls): the trace keeps each string's head and how long
it was, so the log and the parent's memory stay small while the record stays honest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness_learning.harnesses.contract import ToolCall

MAX_ITEMS = 256
MAX_DEPTH = 8


def trim(value: Any, cap: int, depth: int = 0) -> tuple[Any, int]:
    """(`value` with every string over `cap` characters cut, lists and dicts past `MAX_ITEMS`
    entries or `MAX_DEPTH` levels shortened; the characters removed in all (0: unchanged))."""
    if isinstance(value, str):
        if len(value) <= cap:
            return value, 0
        return value[:cap] + f"...[{len(value) - cap} more characters]", len(value) - cap
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        text = str(value)
        return text[:cap], max(len(text) - cap, 1)
    if isinstance(value, dict):
        out, cut = {}, 0
        for i, (key, item) in enumerate(value.items()):
            if i >= MAX_ITEMS:
                cut += len(value) - MAX_ITEMS
                break
            out[str(key)[:cap]], n = trim(item, cap, depth + 1)
            cut += n
        return out, cut
    if isinstance(value, list | tuple):
        out_list, cut = [], max(len(value) - MAX_ITEMS, 0)
        for item in value[:MAX_ITEMS]:
            trimmed, n = trim(item, cap, depth + 1)
            out_list.append(trimmed)
            cut += n
        return out_list, cut
    return value, 0


def traced_call(call: ToolCall, cap: int) -> ToolCall:
    """`call` as the trace stores it: long strings cut to `cap` characters, the characters
    removed recorded in `meta["truncated"]`."""
    (args, args_cut), (result, result_cut) = trim(call.args, cap), trim(call.result, cap)
    if not (args_cut or result_cut):
        return call
    meta = {**call.meta, "truncated": {"args_chars": args_cut, "result_chars": result_cut}}
    return replace(call, args=args, result=result, meta=meta)
