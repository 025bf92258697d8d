"""Bounded copies of tool arguments and results for the stored trace.

A harness can pass megabytes to a tool (refused past `Limits.tool_arg_bytes`, but anything
below still adds up over hundreds of calls): the trace keeps each string's head and how long
it was, each call's stored size is bounded (`Limits.trace_call_bytes`), and so is all of a
problem's trace and all of a candidate's (`trace_problem_bytes`, `trace_candidate_bytes`).
Calls are cut as they arrive, so the log and the parent's memory stay small whatever the
harness sends, while the record says what it lost (`meta["trace_cut"]`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.contract import ToolCall

if TYPE_CHECKING:
    from harness_learning.harnesses.sandbox.limits import Limits
    from harness_learning.harnesses.sandbox.problem_run import ProblemRun

MAX_ITEMS = 256
MAX_DEPTH = 8


def trim(value: object, cap: int, depth: int = 0) -> tuple[Any, int]:
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


ERROR_CHARS = 2000
"""The head of a cut call's error kept in the trace (the reason a call failed stays readable)."""
STUB_ERROR_CHARS = 200
"""What a call stored past a problem's or candidate's trace budget keeps of its error."""
STUB_BYTES = 1024 + ERROR_CHARS
"""Room a cut call needs besides the heads of its arguments and result (meta, error)."""


class TraceBounds:
    """The byte bounds of one candidate's stored traces (`Limits.trace_*`): each call is cut
    to them as it is recorded, charged to its problem's budget (`trace_left` of the run) and
    to the candidate's."""

    def __init__(self, limits: Limits) -> None:
        self.arg_chars: int = limits.trace_arg_chars
        self.call_bytes: int = limits.trace_call_bytes
        self.problem_bytes: int = limits.trace_problem_bytes
        self.candidate_left: int = limits.trace_candidate_bytes

    def store(self, call: ToolCall, run: ProblemRun) -> ToolCall:
        """`call` as the trace keeps it; its stored size is taken from both budgets."""
        call = traced_call(call, self.arg_chars)
        candidate_first = self.candidate_left < run.trace_left
        stored, size = bounded_call(
            call, self.call_bytes, min(run.trace_left, self.candidate_left),
            "Limits.trace_candidate_bytes" if candidate_first else "Limits.trace_problem_bytes")
        run.trace_left -= size
        self.candidate_left -= size
        return stored


def stored_bytes(call: ToolCall) -> int:
    """The size of `call` as the log stores it (its JSON, UTF-8)."""
    data = [call.tool, call.args, call.result, call.error, call.meta]
    return len(json.dumps(data, ensure_ascii=False, default=str).encode())


def bounded_call(call: ToolCall, call_bytes: int, left: int,
                 budget: str = "Limits.trace_problem_bytes") -> tuple[ToolCall, int]:
    """(`call` as the trace stores it, its stored size). Over `call_bytes`, its arguments and
    result become the head of their JSON; past `left` (what the problem's or the candidate's
    trace budget still holds, named by `budget`) only a stub is kept: the tool, tokens,
    latency, the parent's meta (the call's failure kind) and the head of its error. What is
    cut is counted in `meta["trace_cut"]` (bytes removed, the size it had, the limit that
    cut it), so the record says what it lost; a stub is a few hundred bytes, and a problem
    has at most `Limits.tool_calls_per_problem` calls."""
    size = stored_bytes(call)
    if size <= min(call_bytes, left):
        return call, size
    if size <= left or left >= call_bytes:
        keep, limit, error_chars = call_bytes, "Limits.trace_call_bytes", ERROR_CHARS
    else:
        keep, limit, error_chars = max(0, left), budget, STUB_ERROR_CHARS
    stored = _cut(call, keep, error_chars)
    stored_size = stored_bytes(stored)
    meta = {**stored.meta, "trace_cut": {"bytes": max(size - stored_size, 0), "of": size,
                                         "limit": limit}}
    stored = replace(stored, meta=meta)
    return stored, stored_bytes(stored)


def _cut(call: ToolCall, keep: int, error_chars: int) -> ToolCall:
    """`call` with its arguments and result as the head of their JSON, `keep` bytes or so in
    all (none when `keep` leaves no room past the stub), and its error's head."""
    error = call.error[:error_chars] if call.error else call.error
    room = max(0, keep - STUB_BYTES) // 2
    if not room:
        return replace(call, args={}, result=None, error=error)
    args = {"cut": _head(call.args, room)}
    result = None if call.result is None else _head(call.result, room)
    return replace(call, args=args, result=result, error=error)


def _head(value: object, size: int) -> str:
    """The first `size` bytes of `value`'s JSON (a character cut in two is dropped)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.encode()[:size].decode("utf-8", "ignore")
