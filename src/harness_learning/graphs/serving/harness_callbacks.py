"""A served harness's tool calls as LangChain callback events, so any tracer sees them.

The worker's `tools.llm`/`tools.chat_model()` calls reach the parent as bridge calls; here each
one is reported to the callbacks of the mirror node that stands for the harness node making it:
Solver calls as chat-model runs (`on_chat_model_start` .. `on_llm_end`/`on_llm_error`, with
token usage), `tools.search`, `tools.python` and the user's tools as tool runs. Tags and
metadata come with the node's config, so LangSmith nests them under the right node.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_async_callback_manager_for_config

SOLVER_TOOLS = ("llm", "chat")
R = TypeVar("R")


async def traced_tool_call(config: RunnableConfig, loop: asyncio.AbstractEventLoop | None,
                           model: str, tool: str, args: dict[str, Any],
                           call: Awaitable[R]) -> R:
    """Await `call` (the toolbox serving one bridge call), reporting it to `config`'s
    callbacks on `loop` (their owner's event loop: a handler may hold that loop's queues);
    the reply, or the exception, is passed on unchanged."""
    manager = get_async_callback_manager_for_config(config)
    if not manager.handlers:
        return await call
    if tool in SOLVER_TOOLS:
        params = args.get("params") if isinstance(args.get("params"), dict) else {}
        (run,) = await _on(loop, manager.on_chat_model_start(
            {"name": model, "id": ["harness_learning", "Solver"]},
            [_messages(args.get("messages"))], name="Solver",
            invocation_params={"model": model, "tool": tool, **params}))
        end, error = run.on_llm_end, run.on_llm_error
    else:
        name = str(args.get("name")) if tool == "tool" else tool
        inputs = args.get("args") if tool == "tool" and isinstance(args.get("args"), dict) else args
        run = await _on(loop, manager.on_tool_start(
            {"name": name, "description": f"tools.{tool}"}, _text(inputs), inputs=inputs,
            name=name))
        end, error = run.on_tool_end, run.on_tool_error
    try:
        reply = await call
    except BaseException as exc:
        await _on(loop, error(exc))
        raise
    done = _llm_result(reply) if tool in SOLVER_TOOLS else getattr(reply, "result", reply)
    await _on(loop, end(done))
    return reply


async def _on(loop: asyncio.AbstractEventLoop | None, event: Awaitable[R]) -> R:
    """Run a callback event on `loop` (here, if None, already here, or no longer running)."""
    if loop is None or loop is asyncio.get_running_loop() or not loop.is_running():
        return await event
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(event, loop))


def _messages(messages: object) -> list[BaseMessage]:
    if isinstance(messages, str):
        return [HumanMessage(messages)]
    try:
        return convert_to_messages(messages)
    except Exception:  # a shape LangChain does not read: shown as text
        return [HumanMessage(_text(messages))]


def _llm_result(reply: object) -> LLMResult:
    """The reply as a chat generation with its token usage (`ToolReply.meta`)."""
    result, meta = getattr(reply, "result", reply), getattr(reply, "meta", {}) or {}
    if isinstance(result, dict):  # a `chat` reply: text and tool calls
        calls = [{"name": str(c.get("name")), "args": c.get("args") or {}, "id": c.get("id"),
                  "type": "tool_call"} for c in result.get("tool_calls") or []
                 if isinstance(c, dict)]
        message = AIMessage(content=str(result.get("content") or ""), tool_calls=calls)
    else:
        message = AIMessage(content=str(result or ""))
    prompt, completion = int(meta.get("prompt_tokens") or 0), int(meta.get("completion_tokens") or 0)
    if prompt or completion:
        message.usage_metadata = {"input_tokens": prompt, "output_tokens": completion,
                                  "total_tokens": prompt + completion}
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "total_tokens": prompt + completion}
    return LLMResult(generations=[[ChatGeneration(message=message)]],
                     llm_output={"model_name": meta.get("model"), "token_usage": usage,
                                 "cached": bool(getattr(reply, "cached", False))})


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)[:20_000]
