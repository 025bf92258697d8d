"""The parent-side tools behind the sandbox bridge: the Solver, the retriever, the interpreter,
the user's own tools (`harnesses.usertools`) and the Solver as a chat model with tool calls.

Harness code in a worker calls `tools.llm/search/python/call` (and `tools.chat_model()`); each
call arrives here as `Toolbox.call(tool, args)`. Results are returned whole (reports trim later) but one result's
size is capped, and the parameters a harness may pass to the Solver are a fixed list with
checked values (`harnesses.solver_params`), so a harness cannot point the parent's model
client somewhere else, nor send a value an endpoint refuses as if the endpoint had failed.

Every Solver call of a harness (`tools.llm`, `tools.chat_model()`) passes through `llm`: with a
run's `ledger` (`harnesses.llm.ledger`), it reserves its share of the run's budgets there
before it is sent, so no budget is passed with problems in flight.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, cast

from harness_learning.harnesses.contract import ToolInputError
from harness_learning.harnesses.llm.config import spec_params
from harness_learning.harnesses.llm.ledger import (
    DEFAULT_COMPLETION_TOKENS,
    SpendLedger,
    Use,
    prompt_bound,
)
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.python_exec import run_python
from harness_learning.harnesses.sandbox.records import ToolReply
from harness_learning.harnesses.solver_params import LLM_PARAMS, check_params

if TYPE_CHECKING:
    from harness_learning.harnesses.llm.prices import Price
    from harness_learning.harnesses.sandbox.backend import SandboxBackend
    from harness_learning.harnesses.tracing import CallbackTracer, Tracer
    from harness_learning.harnesses.usertools import UserTools
    from harness_learning.retrieval.protocol import Retriever

MAX_TEXT_CHARS = 100_000
"""Longest Solver reply passed back to a harness."""
MAX_PASSAGE_CHARS = 20_000
MAX_K = 50
Prompt = str | list[dict[str, str]]
"""What `tools.llm` sends the Solver: a prompt string or {role, content} messages."""
__all__ = ["LLM_PARAMS", "MAX_K", "MAX_TEXT_CHARS", "SolverClient", "ToolInputError", "Toolbox"]


class SolverClient(Protocol):
    """What `tools.llm` needs of a model client (`harnesses.llm.ModelClient` fits). A client
    whose `accepts_empty` is true is asked with `allow_empty=True`: it must return an empty
    completion as it came, not raise it as an infrastructure failure."""

    async def acomplete(self, messages: Prompt, **params: Any) -> object: ...


class Toolbox:
    """Serves bridge calls. `solver`, `retriever` may be None (the tool then fails cleanly)."""

    def __init__(self, solver: SolverClient | None = None, retriever: Retriever | None = None,
                 python_limits: Limits | None = None,
                 *, solver_params: dict[str, Any] | None = None,
                 backend: SandboxBackend | None = None, user_tools: UserTools | None = None,
                 tracer: Tracer | CallbackTracer | None = None) -> None:
        self.solver = solver
        self.tracer = tracer
        """A `harnesses.tracing` tracer when the run is traced: each Solver call is traced."""
        self.user_tools = user_tools
        """A `harnesses.usertools.UserTools`, or None when the run has no tools of the user's."""
        self.solver_params = {**(solver_params or {}), **spec_params(solver)}
        """Defaults of every Solver call: the run's configuration under the Solver spec's own
        (`spec_params`); a harness may override the ones in `LLM_PARAMS`."""
        self.retriever = retriever
        self.ledger: SpendLedger | None = None
        """The run's budgets (`harnesses.llm.ledger`), set by the adapter: each Solver call
        reserves its share there before it is sent. None: calls are not budgeted."""
        self.solver_price: Price | None = None
        """The Solver's `prices.Price`, for the $ share of a reservation (None: free)."""
        self.python_limits = python_limits or Limits()
        self.backend = backend

    async def call(self, tool: str, args: dict[str, Any]) -> ToolReply:
        if tool == "llm":
            return await self.llm(args.get("messages"), args.get("params") or {})
        if tool == "search":
            return await self.search(args.get("query"), args.get("k", 5))
        if tool == "python":
            return await self.python(args.get("code"), args.get("timeout"))
        if tool == "tool":
            return await self.user_tool(args.get("name"), args.get("args"))
        if tool == "chat":
            return await self.chat(args.get("messages"), args.get("tools") or [],
                                   args.get("tool_choice"), args.get("params") or {})
        raise ToolInputError(f"unknown tool {tool!r}")

    def tool_specs(self) -> list[dict[str, Any]]:
        """Name, description and argument schema of each user tool (sent to the worker)."""
        return self.user_tools.specs() if self.user_tools is not None else []

    async def user_tool(self, name: object, args: object) -> ToolReply:
        if self.user_tools is None:
            raise ToolInputError(f"tools.call({name!r}): this run has no tools of its own "
                                 "(pass --tools module:attr)")
        from harness_learning.harnesses.usertools import ToolArgumentError

        try:
            if self.tracer is None:
                return await self.user_tools.call(name, args)
            async with self.tracer.tool_call(str(name), args if isinstance(args, dict) else {}
                                             ) as call:
                call.result = await self.user_tools.call(name, args)
            return call.result
        except ToolArgumentError as exc:
            raise ToolInputError(str(exc)) from None

    async def chat(self, messages: object, tools: list[dict[str, Any]], tool_choice: object,
                   params: dict[str, Any]) -> ToolReply:
        """The Solver as a chat model: tool schemas in, a reply with tool calls out
        (prompted tool calling, see `harnesses.chat_tools`)."""
        from harness_learning.harnesses.chat_tools import parse_reply, to_text_messages

        if not isinstance(tools, list):
            raise ToolInputError("chat: `tools` must be a list of tool schemas")
        reply = await self.llm(to_text_messages(messages, tools, tool_choice), params)
        reply.result = parse_reply(reply.result, tools)
        return reply

    async def llm(self, messages: object, params: dict[str, Any]) -> ToolReply:
        if self.solver is None:
            raise ToolInputError("no Solver model is configured")
        check_messages(messages)
        prompt = cast("Prompt", messages)
        params = check_params(params)
        # An empty reply is an answer the harness gets: its own stop sequences or token limit
        # can produce one from a healthy endpoint, and only the parent's failures go unscored.
        empty_ok = {"allow_empty": True} if getattr(self.solver, "accepts_empty", False) else {}
        merged = {**self.solver_params, **params}
        if self.ledger is None:
            completion = await self._ask(prompt, empty_ok, merged)
        else:
            completion = await self._budgeted(prompt, empty_ok, merged)
        tokens = _tokens(completion)
        text = str(getattr(completion, "text", completion) or "")
        meta = {k: getattr(completion, k, None) for k in
                ("model", "prompt_tokens", "completion_tokens", "finish_reason", "latency_s", "cost")}
        if len(text) > MAX_TEXT_CHARS:
            text, meta["truncated_from"] = text[:MAX_TEXT_CHARS], len(text)
        return ToolReply(text, tokens, bool(getattr(completion, "cached", False)), meta)

    async def _ask(self, messages: Prompt, empty_ok: dict[str, bool],
                   params: dict[str, Any]) -> object:
        if self.tracer is None:
            return await self.solver.acomplete(messages, **empty_ok, **params)
        return await self._traced_llm(messages, empty_ok, params)

    async def _budgeted(self, messages: Prompt, empty_ok: dict[str, bool],
                        params: dict[str, Any]) -> object:
        """One call inside its reservation: at most its prompt bound plus its `max_tokens`
        (the run's, the model's default, else `DEFAULT_COMPLETION_TOKENS`, then sent
        explicitly so the bound holds), priced at the Solver's price."""
        configured = getattr(getattr(self.solver, "config", None), "params", None) or {}
        completion_cap = params.get("max_tokens") or configured.get("max_tokens")
        if not completion_cap:
            completion_cap = params["max_tokens"] = DEFAULT_COMPLETION_TOKENS
        prompt = prompt_bound(messages)
        price = self.solver_price
        cost = price.cost(prompt, completion_cap) if price is not None else 0.0
        assert self.ledger is not None
        async with self.ledger.reserve(prompt + int(completion_cap), cost) as use:
            completion = await self._ask(messages, empty_ok, params)
            _used(use, completion)
        return completion

    async def _traced_llm(self, messages: Prompt, empty_ok: dict[str, bool],
                          params: dict[str, Any]) -> object:
        """A Solver call as a traced model call, under the problem's run (the candidate's:
        `sandbox.client` serves each call in the context its run started in)."""
        model = str(getattr(getattr(self.solver, "config", None), "model", "solver"))
        async with self.tracer.model_call("solver", model, params, messages) as call:
            call.result = await self.solver.acomplete(messages, **empty_ok, **params)
        return call.result

    async def search(self, query: object, k: object) -> ToolReply:
        if self.retriever is None:
            raise ToolInputError("this task has no retriever: tools.search is unavailable")
        if not isinstance(query, str) or not query.strip():
            raise ToolInputError(f"tools.search needs a non-empty query string, got {query!r}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ToolInputError(f"tools.search needs k >= 1, got {k!r}")
        passages = await asyncio.to_thread(self.retriever.search, query, min(k, MAX_K))
        rows = []
        for p in passages:
            row = p.to_dict()
            row["text"] = row["text"][:MAX_PASSAGE_CHARS]
            rows.append(row)
        return ToolReply(rows, meta={"k": min(k, MAX_K), "n": len(rows)})

    async def python(self, code: object, timeout: object) -> ToolReply:
        if not isinstance(code, str):
            raise ToolInputError(f"tools.python needs code as a string, got {type(code).__name__}")
        wall = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None
        result = await run_python(code, wall, self.python_limits, backend=self.backend)
        return ToolReply({"stdout": result.stdout, "error": result.error})


def _tokens(completion: object) -> int:
    return int(getattr(completion, "prompt_tokens", 0) or 0) + int(
        getattr(completion, "completion_tokens", 0) or 0)


def _used(use: Use, completion: object) -> None:
    """What a call used, as the run's log will count it (a cached answer costs nothing)."""
    use.tokens = _tokens(completion)
    cost = getattr(completion, "cost", None)
    use.cost_usd = float(cost) if isinstance(cost, int | float) and cost > 0 else 0.0


def check_messages(messages: object) -> None:
    """A prompt string or a list of {role, content} messages."""
    if isinstance(messages, str):
        return
    if isinstance(messages, list) and messages and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in messages
    ):
        return
    raise ToolInputError("tools.llm takes a prompt string or a non-empty list of "
                         "{'role': str, 'content': str} messages")
