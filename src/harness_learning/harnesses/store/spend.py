"""What a run has spent, in one shape for every backend and report: Solver calls, tokens and
USD from the evaluations' traces (each Solver call records its price in `meta["cost"]`), the
Proposer's from its proposals and their `proposer_cost` events.

Why an event for the Proposer's price, beside each proposal's own `cost_usd`: a candidate may
take several Proposer calls (a resample, a repair turn) and only its last completion is its
proposal, and an event keeps the price of every call made, even one whose proposal a crash
lost before it was written (the call was paid for)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness_learning.harnesses.contract import SOLVER_OPS, ToolCall

PROPOSER_ATTEMPT_EVENT = "proposer_attempt"
"""Event kind: one Proposer call of a candidate ({"attempt": "sample" | "resample" | "repair",
...}). A candidate's proposal keeps its last completion only, so its second chances are counted
as Proposer calls from these events: those whose attempt is not the first "sample"."""
PROPOSER_ORIGIN = "proposer"
"""The `origin` of a proposal the Proposer model wrote (operators and the merge call no model,
so their proposals are no Proposer calls)."""
PROPOSER_COST_EVENT = "proposer_cost"
"""Event kind: {"proposal_id", "round", "cost_usd"} of one priced Proposer call."""
KEYS = ("solver_calls", "solver_tokens", "solver_cost_usd", "proposer_calls",
        "proposer_tokens", "proposer_cost_usd", "tokens", "cost_usd")
"""What `LogStore.spent()` returns; `tokens` and `cost_usd` are Solver and Proposer together."""


def spend(solver_calls: int = 0, solver_tokens: int = 0, solver_cost_usd: float = 0.0,
          proposer_calls: int = 0, proposer_tokens: int = 0,
          proposer_cost_usd: float = 0.0) -> dict[str, Any]:
    """The totals in `KEYS` order, with both roles added up."""
    return {"solver_calls": int(solver_calls), "solver_tokens": int(solver_tokens),
            "solver_cost_usd": float(solver_cost_usd), "proposer_calls": int(proposer_calls),
            "proposer_tokens": int(proposer_tokens),
            "proposer_cost_usd": float(proposer_cost_usd),
            "tokens": int(solver_tokens) + int(proposer_tokens),
            "cost_usd": float(solver_cost_usd) + float(proposer_cost_usd)}


def _field(call: ToolCall | Mapping[str, Any], name: str) -> Any:
    return call.get(name) if isinstance(call, Mapping) else getattr(call, name, None)


def is_solver_call(call: ToolCall | Mapping[str, Any]) -> bool:
    """A trace entry (a `ToolCall` or its stored dict) that called the Solver."""
    return _field(call, "tool") in SOLVER_OPS


def call_cost(call: ToolCall | Mapping[str, Any]) -> float:
    """The USD a trace entry's Solver call cost (0 when unpriced, cached or not the Solver)."""
    meta = _field(call, "meta")
    cost = meta.get("cost") if isinstance(meta, Mapping) and is_solver_call(call) else None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0


def solver_spend(traces: Iterable[Iterable[Any]]) -> tuple[int, float]:
    """(Solver calls, their USD) over the traces of some evaluations."""
    calls, cost = 0, 0.0
    for trace in traces:
        for call in trace or ():
            if is_solver_call(call):
                calls += 1
                cost += call_cost(call)
    return calls, cost


def event_cost(payload: Mapping[str, Any]) -> float:
    value = payload.get("cost_usd")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def spent_from(evaluations: Iterable[Any], proposals: Iterable[Any],
               events: Iterable[Any]) -> dict[str, Any]:
    """`spend` read from a log's records (`Evaluation`, `Proposal`, `Event`), as the SQL
    backends sum it in the database: a backend that has no query language gets the same
    ledger. Proposer calls are the Proposer's proposals and their second chances (attempts
    other than the first "sample"); its USD is the `proposer_cost` events'."""
    solver_tokens, traces = 0, []
    for ev in evaluations:
        solver_tokens += int(ev.result.tokens or 0)
        traces.append(ev.result.calls)
    calls, cost = solver_spend(traces)
    proposer_calls = proposer_tokens = 0
    for p in proposals:
        proposer_calls += p.origin == PROPOSER_ORIGIN
        proposer_tokens += int(p.prompt_tokens or 0) + int(p.completion_tokens or 0)
    proposer_cost = 0.0
    for e in events:
        attempt = e.payload.get("attempt") if isinstance(e.payload, Mapping) else None
        if e.kind == PROPOSER_ATTEMPT_EVENT and attempt is not None and attempt != "sample":
            proposer_calls += 1
        elif e.kind == PROPOSER_COST_EVENT and isinstance(e.payload, Mapping):
            proposer_cost += event_cost(e.payload)
    return spend(solver_calls=calls, solver_tokens=solver_tokens, solver_cost_usd=cost,
                 proposer_calls=proposer_calls, proposer_tokens=proposer_tokens,
                 proposer_cost_usd=proposer_cost)
