"""A run's budgets bind per Solver call (harnesses/llm/ledger.py): each call reserves its share
before it is sent, with the others in flight counted, so spend never passes a cap; a refusal
is a `budget` failure and sticks."""

from __future__ import annotations

import asyncio

import pytest

from harness_learning.harnesses.llm.errors import InfraError
from harness_learning.harnesses.llm.ledger import (
    MESSAGE_TOKENS,
    TEMPLATE_TOKENS,
    Caps,
    SpendLedger,
    prompt_bound,
)
from harness_learning.harnesses.sandbox.records import failure_kind
from harness_learning.harnesses.toolbox import Toolbox


async def call(ledger: SpendLedger, tokens: int, used: int, sent: list[int],
               wait: float = 0.01) -> str:
    """One call reserving `tokens` and using `used`; 'sent' or the refusal's kind."""
    try:
        async with ledger.reserve(tokens, 0.0) as use:
            sent.append(ledger.held["solver_calls"])
            await asyncio.sleep(wait)
            use.tokens = used
    except InfraError as err:
        return err.kind
    return "sent"


def test_the_call_cap_holds_with_many_calls_in_flight() -> None:
    async def go() -> tuple[list[str], SpendLedger]:
        ledger = SpendLedger(Caps(solver_calls=10), base=_base(solver_calls=3))
        sent: list[int] = []
        outcomes = await asyncio.gather(*(call(ledger, 5, 5, sent) for _ in range(64)))
        return outcomes, ledger

    outcomes, ledger = asyncio.run(go())
    assert outcomes.count("sent") == 7 and outcomes.count("budget") == 57
    assert ledger.settled["solver_calls"] == 10 and ledger.totals()["solver_calls"] == 10
    assert ledger.refused == "solver-call budget 10 reached"


def test_a_token_share_waits_for_calls_in_flight_and_is_refused_only_when_it_cannot_fit() -> None:
    async def go() -> tuple[list[str], list[int], SpendLedger]:
        ledger = SpendLedger(Caps(tokens=1000))
        sent: list[int] = []
        # each reserves 400 but uses 100: two fit at once, the rest wait for a settlement
        outcomes = await asyncio.gather(*(call(ledger, 400, 100, sent) for _ in range(12)))
        return outcomes, sent, ledger

    outcomes, in_flight, ledger = asyncio.run(go())
    assert max(in_flight) == 2, "never more reserved than the cap"
    # each settles at 100: with 600 spent a share of 400 still fits (alone); with 700 it cannot
    assert outcomes.count("sent") == 7 and outcomes.count("budget") == 5
    assert ledger.settled["tokens"] == 700 <= 1000
    assert ledger.refused == "token budget 1000 reached"


def test_a_refusal_sticks_and_the_held_out_test_is_never_refused() -> None:
    async def go() -> tuple[list[str], str, SpendLedger]:
        ledger = SpendLedger(Caps(tokens=500, cost_usd=1.0))
        sent: list[int] = []
        first = [await call(ledger, 600, 0, sent), await call(ledger, 10, 10, sent)]
        with ledger.unbounded():
            held_out = await call(ledger, 600, 600, sent)
        return first, held_out, ledger

    first, held_out, ledger = asyncio.run(go())
    assert first == ["budget", "budget"] and held_out == "sent"
    assert ledger.settled["tokens"] == 600, "counted, not refused"


def test_the_cost_cap_and_charged_proposer_calls() -> None:
    async def go() -> list[str]:
        ledger = SpendLedger(Caps(cost_usd=0.10), base=_base(cost_usd=0.02))
        outcomes = []
        async with ledger.reserve(100, 0.05) as use:
            use.cost_usd = 0.01
        outcomes.append("sent")
        ledger.charge(tokens=900, cost_usd=0.05)  # a Proposer call: counted as it returns
        try:
            async with ledger.reserve(100, 0.05):
                outcomes.append("sent")
        except InfraError as err:
            outcomes.append(str(err))
        return outcomes

    outcomes = asyncio.run(go())
    assert outcomes[0] == "sent" and "cost budget $0.1 reached" in outcomes[1]


def test_the_prompt_bound_is_bytes_and_template() -> None:
    assert prompt_bound("héllo") == 6 + MESSAGE_TOKENS + TEMPLATE_TOKENS
    messages = [{"role": "user", "content": "ab"}, {"role": "assistant", "content": "€"}]
    assert prompt_bound(messages) == 2 + 3 + 2 * MESSAGE_TOKENS + TEMPLATE_TOKENS


class Counted:
    config = None

    def __init__(self) -> None:
        self.params: list[dict] = []

    async def acomplete(self, messages, **params):
        self.params.append(params)
        return type("Done", (), {"text": "4", "prompt_tokens": 20, "completion_tokens": 1,
                                 "cost": None, "cached": False})()


def test_the_toolbox_reserves_every_solver_call_and_bounds_its_completion() -> None:
    """`tools.llm` and `tools.chat_model()` both pass through the one reservation; a call that
    no max_tokens bounds is sent with the default share, so the bound holds; a refused call is
    a `budget` failure (unscored), never the harness's."""
    solver = Counted()
    box = Toolbox(solver)
    box.ledger = SpendLedger(Caps(solver_calls=2))

    async def go() -> list[str]:
        kinds = []
        for tool, args in [("llm", {"messages": "2+2?"}),
                           ("chat", {"messages": [{"role": "user", "content": "2+2?"}]}),
                           ("llm", {"messages": "2+2?", "params": {"max_tokens": 1}})]:
            try:
                await box.call(tool, args)
                kinds.append("sent")
            except InfraError as err:
                kinds.append(failure_kind(err))
        return kinds

    assert asyncio.run(go()) == ["sent", "sent", "budget"]
    assert [p.get("max_tokens") for p in solver.params] == [256, 256]
    assert box.ledger.settled == {"solver_calls": 2, "tokens": 42, "cost_usd": 0.0}


def _base(**spent: float):
    async def read() -> dict:
        return spent
    return read


@pytest.mark.parametrize("caps", [Caps(), Caps(solver_calls=None, tokens=None)])
def test_no_caps_no_limit(caps: Caps) -> None:
    assert not caps.limited
