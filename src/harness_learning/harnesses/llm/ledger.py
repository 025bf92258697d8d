"""`SpendLedger`: a run's spending caps, held per call.

Why reservations: a budget checked only before an evaluation starts lets the evaluations in
flight spend past it (a harness making 64 calls a problem took `--max-solver-calls 10` to 384).
So each Solver call reserves its share before it is sent, with every other call in flight
counted: one call; at most its prompt's UTF-8 bytes plus the chat template's overhead plus
its `max_tokens` in tokens (a byte-level or SentencePiece tokenizer never makes more tokens
than bytes); and that many tokens at the model's price in USD. When the call returns, its
reservation is replaced by what it used. A reservation that does not fit waits while other
calls are in flight (they usually use less than they reserved) and is refused when it cannot
fit even with none in flight. A refusal is an `InfraError("budget")` (the problem is unscored,
never the harness's fault) and it sticks: every later call is refused too, and the adapter
stops the run with the evaluation that was cut neither judged nor adopted.

The ledger starts from what the run's log says was spent (`base`, read once), and counts
everything sent since, also the calls of problems whose results are never stored.

The parent's own calls are held the same way: each Proposer call reserves its prompt bound and
`max_tokens` (tokens and USD, no Solver call), and each call of a judge metric reserves as a
Solver call (the evaluator names the run's ledger in `SPEND` while it scores). A user metric
(`module:function`) runs in a thread of its own, off the run's event loop: its calls through
the model layer are collected in `METERED` and reach the problem's trace as Solver calls
(`judge` entries), counted by `charge` and by the log's spend once the problem is scored.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.llm.errors import InfraError

if TYPE_CHECKING:
    from harness_learning.harnesses.llm.prices import Price

TEMPLATE_TOKENS = 64
"""Tokens a chat template may add to a call (a default system prompt, the reply's opening)."""
MESSAGE_TOKENS = 8
"""Tokens a chat template may add around each message (role markers, separators)."""
DEFAULT_COMPLETION_TOKENS = 256
"""`max_tokens` of a budgeted call that nothing else bounds (the run's estimate assumes it)."""


@dataclass(frozen=True)
class Caps:
    """The run's limits: Solver calls, tokens (Solver and Proposer) and USD; None = none."""

    solver_calls: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None

    @property
    def limited(self) -> bool:
        return any(v is not None for v in (self.solver_calls, self.tokens, self.cost_usd))


@dataclass
class Use:
    """What one reserved call used (set by the caller before the reservation ends); a call
    that failed used its one call and no tokens."""

    tokens: int = 0
    cost_usd: float = 0.0


def prompt_bound(messages: object) -> int:
    """Most tokens `messages` (a prompt string or chat messages) can make, template included."""
    if isinstance(messages, str):
        return len(messages.encode("utf-8", "replace")) + MESSAGE_TOKENS + TEMPLATE_TOKENS
    total = TEMPLATE_TOKENS
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else message
        total += len(str(content or "").encode("utf-8", "replace")) + MESSAGE_TOKENS
    return total


SPEND: contextvars.ContextVar[SpendLedger | None] = contextvars.ContextVar(
    "harness_learning_spend", default=None)
"""The run's ledger while the evaluator scores a problem: a judge metric reserves its calls
on it (None: no budget binds them)."""
METERED: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "harness_learning_metered", default=None)
"""Where `ModelClient` puts each completion it returns while a user metric runs (None: not
collected). A list, appended from whichever loop serves the call."""


class SpendLedger:
    """Reservations against `caps`; `base` returns what the run spent before this process
    (keys `solver_calls`, `tokens`, `cost_usd`). One ledger per run, used on one event loop."""

    def __init__(self, caps: Caps,
                 base: Callable[[], Awaitable[Mapping[str, Any]]] | None = None) -> None:
        self.caps = caps
        self._base_reader = base
        self._loaded = base is None
        self.settled = {"solver_calls": 0, "tokens": 0, "cost_usd": 0.0}
        """Spent: the base, then every call that ended (and every Proposer call charged)."""
        self.held = {"solver_calls": 0, "tokens": 0, "cost_usd": 0.0}
        """Reserved by calls in flight."""
        self.refused: str | None = None
        """Why a reservation was refused (`solver-call budget 10 reached`); None until one is."""
        self.stop_write: asyncio.Future[Any] | None = None
        """The write of the stop `refused` caused to the run's log: Proposer calls refused at
        once in parallel start it once and each awaits it before raising, so the first to
        stop the run cannot cancel it."""
        self._unbounded = 0
        self._changed: asyncio.Condition | None = None

    async def load(self) -> None:
        """Read the base once (before the first reservation)."""
        if self._loaded:
            return
        spent = await self._base_reader()  # type: ignore[misc]
        if not self._loaded:
            self._loaded = True
            for key in self.settled:
                self.settled[key] += spent.get(key, 0) or 0

    def totals(self) -> dict[str, Any]:
        """What the run has committed to: spent, and each call in flight as the one call it
        will be (its tokens and USD are not known until it returns)."""
        return {**self.settled,
                "solver_calls": self.settled["solver_calls"] + self.held["solver_calls"]}

    @contextlib.contextmanager
    def unbounded(self) -> Iterator[None]:
        """Calls made inside are counted but never refused (the held-out test of a finished
        run, which the budgets of its adaptation do not bound)."""
        self._unbounded += 1
        try:
            yield
        finally:
            self._unbounded -= 1

    def charge(self, tokens: int = 0, cost_usd: float = 0.0, solver_calls: int = 0) -> None:
        """Count calls made without a reservation (the Proposer's; a judge metric's, which
        the budgets count as Solver calls)."""
        self.settled["solver_calls"] += int(solver_calls)
        self.settled["tokens"] += int(tokens)
        self.settled["cost_usd"] += float(cost_usd)

    @contextlib.asynccontextmanager
    async def reserve(self, tokens: int, cost_usd: float,
                      solver_calls: int = 1) -> AsyncIterator[Use]:
        """Hold one call's share (`tokens` and `cost_usd` bound what it can use; a Proposer
        call is no Solver call: `solver_calls=0`) until the block ends; set the yielded `Use`
        to what it used. Raises `InfraError("budget")` when the share cannot fit."""
        await self.load()
        need = {"solver_calls": int(solver_calls), "tokens": int(tokens),
                "cost_usd": float(cost_usd)}
        changed = self._condition()
        async with changed:
            while True:
                reason = self._refusal(need)
                if reason is not None:
                    raise InfraError("budget", f"{reason}: the call was not sent")
                if self._unbounded or self._fits(need, in_flight=True):
                    break
                await changed.wait()
            for key, value in need.items():
                self.held[key] += value
        use = Use()
        try:
            yield use
        finally:
            async with changed:
                for key, value in need.items():
                    self.held[key] -= value
                self.settled["solver_calls"] += need["solver_calls"]
                self.settled["tokens"] += int(use.tokens)
                self.settled["cost_usd"] += float(use.cost_usd)
                changed.notify_all()

    def _refusal(self, need: Mapping[str, Any]) -> str | None:
        """Why `need` must be refused now (it cannot fit, or an earlier call was refused)."""
        if self._unbounded:
            return None
        if self.refused is None:
            calls = self.caps.solver_calls
            if calls is not None and need["solver_calls"] and (self.settled["solver_calls"] + self.held["solver_calls"]
                                      + need["solver_calls"] > calls):
                self.refused = f"solver-call budget {calls} reached"
            elif not self._fits(need, in_flight=False):
                self.refused = (f"token budget {self.caps.tokens} reached"
                                if not self._fits_key(need, "tokens", False)
                                else f"cost budget ${self.caps.cost_usd} reached")
        return self.refused

    def _fits(self, need: Mapping[str, Any], in_flight: bool) -> bool:
        return all(self._fits_key(need, key, in_flight) for key in ("tokens", "cost_usd"))

    def _fits_key(self, need: Mapping[str, Any], key: str, in_flight: bool) -> bool:
        cap = self.caps.tokens if key == "tokens" else self.caps.cost_usd
        if cap is None:
            return True
        held = self.held[key] if in_flight else 0
        return self.settled[key] + held + need[key] <= cap

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed


def reserved(ledger: SpendLedger | None, messages: object, completion_tokens: int,
             price: Price | None, solver_calls: int = 1,
             ) -> contextlib.AbstractAsyncContextManager[Use]:
    """The reservation of one call of `messages` answered in at most `completion_tokens`,
    priced at `price` (a `prices.Price` or None): the ledger's, or a free one when no ledger
    binds the call."""
    if ledger is None:
        return contextlib.nullcontext(Use())
    tokens = prompt_bound(messages) + int(completion_tokens)
    cost = price.cost(prompt_bound(messages), completion_tokens) if price is not None else 0.0
    return ledger.reserve(tokens, cost, solver_calls=solver_calls)


def used(use: Use, completion: object) -> None:
    """Record on `use` what `completion` used (a cached answer costs nothing)."""
    use.tokens = int(getattr(completion, "prompt_tokens", 0) or 0) + int(
        getattr(completion, "completion_tokens", 0) or 0)
    cost = getattr(completion, "cost", None)
    use.cost_usd = float(cost) if isinstance(cost, int | float) and cost > 0 else 0.0
