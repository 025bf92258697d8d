"""The run's budgets (`AdaptConfig.budget`), held at two grains.

Per Solver call: the toolbox reserves each call's share on the run's `SpendLedger`
(`harnesses.llm.ledger`) before it is sent, with every call in flight counted, so no budget
is passed however many problems run at once. A refused call leaves its problem unscored as
`budget`; the evaluation it belonged to is cut short, and `budget_cut` stops the run there:
that evaluation is never judged, so its version is never adopted.

The parent's own calls too: each Proposer call reserves its tokens and USD (`proposer_share`,
a refusal stops the run before the call is sent), and a judge metric's calls reserve as Solver
calls while the evaluator scores (`ledger.SPEND`).

Per evaluation: between rounds, `stop_reason` reads the spend the `select` node put in the
state (the store's `spent()`); before each evaluation starts (the current version's, each
candidate's, each racing stage's, each memorisation probe), `check_budget` reads the store and
the ledger and raises `BudgetStop` once a limit is reached, so no evaluation starts past one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from harness_learning.graphs.adapter.config import AdaptConfig, Budget
from harness_learning.harnesses.contract import JUDGE_OP
from harness_learning.harnesses.llm.errors import InfraError
from harness_learning.harnesses.llm.ledger import Use, reserved
from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.store.spend import call_cost

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.harnesses.llm import ModelClient
    from harness_learning.harnesses.llm.client import Messages


class BudgetStop(RuntimeError):
    """A budget is reached before an evaluation could start. The run ends there, as it does
    on a budget between rounds: `reason` names the budget, and nothing finished is lost."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}{detail}")
        self.reason = reason


def budget_reason(budget: Budget, spent: Mapping[str, Any]) -> str | None:
    """Which budget `spent` has reached (`solver-call budget 50 reached`, ...), or None."""
    if budget.solver_calls is not None and spent.get("solver_calls", 0) >= budget.solver_calls:
        return f"solver-call budget {budget.solver_calls} reached"
    if budget.tokens is not None and spent.get("tokens", 0) >= budget.tokens:
        return f"token budget {budget.tokens} reached"
    if budget.cost_usd is not None and spent.get("cost_usd", 0.0) >= budget.cost_usd:
        return f"cost budget ${budget.cost_usd} reached"
    return None


def limited(budget: Budget) -> bool:
    return any(v is not None for v in (budget.solver_calls, budget.tokens, budget.cost_usd))


def spending(ctx: AdapterContext, budgeted: bool) -> contextlib.AbstractContextManager[Any]:
    """The scope of an evaluation's Solver calls: those of an unbudgeted one (the held-out
    test after a run) are counted on the ledger, never refused."""
    ledger = getattr(ctx, "ledger", None)
    return ledger.unbounded() if ledger is not None and not budgeted else contextlib.nullcontext()


def cut_short(result: ProblemResult) -> bool:
    """A budget refused one of the problem's Solver calls: it did not finish, also where its
    harness caught the refusal and answered anyway."""
    return result.error_kind == ErrorKind.BUDGET or any(
        c.error and c.meta.get("kind") == ErrorKind.BUDGET for c in result.calls)


def charge_judged(ctx: AdapterContext, result: ProblemResult) -> None:
    """Count a finished problem's metric calls that no reservation held (Solver calls to every
    budget, made in the parent: a user metric's; a judge's reserve and settle on the ledger
    themselves) on the run's ledger, before the next call's."""
    ledger = getattr(ctx, "ledger", None)
    judged = [c for c in result.calls
              if c.tool == JUDGE_OP and not (c.meta or {}).get("reserved")]
    if ledger is not None and judged:
        ledger.charge(sum(c.tokens for c in judged), sum(call_cost(c) for c in judged),
                      solver_calls=len(judged))


PROPOSER_COMPLETION_TOKENS = 2048
"""`max_tokens` of a Proposer call that nothing else bounds (the run's estimate assumes it)."""


@contextlib.asynccontextmanager
async def proposer_share(ctx: AdapterContext, proposer: ModelClient, messages: Messages,
                         params: dict[str, Any]) -> AsyncIterator[Use]:
    """Hold one Proposer call's share of the token and USD budgets (its prompt bound and
    `max_tokens`, set in `params` when nothing else bounds it; no Solver call) before it is
    sent; set the yielded `Use` to what it used. A share that cannot fit stops the run
    (`BudgetStop`) with the call never sent, logged as the run's `budget_stop`."""
    from harness_learning.harnesses.llm.prices import price_of

    ledger = getattr(ctx, "ledger", None)
    if ledger is None:
        yield Use()
        return
    config = getattr(proposer, "config", None)
    cap = params.get("max_tokens") or (getattr(config, "params", None) or {}).get("max_tokens")
    if not cap:
        cap = params["max_tokens"] = PROPOSER_COMPLETION_TOKENS
    price = price_of(config) if config is not None else None
    try:
        async with reserved(ledger, messages, int(cap), price, solver_calls=0) as use:
            yield use
    except InfraError as exc:
        if exc.kind != ErrorKind.BUDGET:
            raise
        reason = ledger.refused or "budget reached"
        if ledger.stop_write is None:
            ledger.stop_write = asyncio.ensure_future(log_stop(ctx, reason, "proposer call"))
        spent = await asyncio.shield(ledger.stop_write)
        raise BudgetStop(reason, f" (spent {spent_line(spent)}; a Proposer call was not "
                                 "sent)") from None


async def log_stop(ctx: AdapterContext, reason: str, before: str,
                   spent: dict[str, Any] | None = None) -> dict[str, Any]:
    """Log the run's `budget_stop` before `before` with the spend (`spent`, or read now);
    return the spend it records."""
    spent = spent if spent is not None else await committed(ctx)
    await ctx.store.aappend_event("budget_stop", {"reason": reason, "before": before,
                                                  "spent": spent})
    return spent


async def committed(ctx: AdapterContext) -> dict[str, Any]:
    """The store's spend, raised to what the ledger has committed (spent and in flight)."""
    spent = dict(await ctx.store.aspent())
    ledger = getattr(ctx, "ledger", None)
    if ledger is not None:
        await ledger.load()
        for key, value in ledger.totals().items():
            spent[key] = max(spent.get(key, 0) or 0, value)
    return spent


async def budget_cut(ctx: AdapterContext, what: str, unscored: list[str]) -> None:
    """Stop the run: a budget refused Solver calls of `what` (an evaluation), so problems
    `unscored` never finished and the evaluation may not be judged."""
    ledger = getattr(ctx, "ledger", None)
    reason = (ledger.refused if ledger is not None else None) or "budget reached"
    spent = await committed(ctx)
    await ctx.store.aappend_event("budget_stop", {"reason": reason, "before": what,
                                                  "cut": sorted(unscored), "spent": spent})
    raise BudgetStop(reason, f" (spent {spent_line(spent)}; {what} cut short after "
                             f"{len(unscored)} problem(s) were refused a Solver call; "
                             "it is not judged)")


async def check_budget(ctx: AdapterContext, what: str) -> None:
    """Raise `BudgetStop` if the run has reached a budget; `what` names the evaluation that
    would start (for the run's log)."""
    budget = ctx.config.budget
    if not limited(budget):
        return
    spent = await committed(ctx)
    reason = budget_reason(budget, spent)
    if reason is not None:
        await log_stop(ctx, reason, what, spent)
        raise BudgetStop(reason, f" (spent {spent_line(spent)}; {what} not started)")


def spent_line(spent: Mapping[str, Any]) -> str:
    """`12 Solver calls, 3,400 tokens, $0.0021`."""
    return (f"{spent.get('solver_calls', 0):,} Solver calls, {spent.get('tokens', 0):,} tokens, "
            f"${spent.get('cost_usd', 0.0):.4f}")


def check_priced(config: AdaptConfig) -> None:
    """A $ budget needs a price for both models: refuse one nothing prices, before the run
    starts (a cost that stays 0 would never stop it)."""
    from harness_learning.harnesses.llm import ModelConfig
    from harness_learning.harnesses.llm.models import resolve_role
    from harness_learning.harnesses.llm.prices import price_of

    if config.budget.cost_usd is None:
        return
    for role, spec in (("solver", config.solver), ("proposer", config.proposer)):
        model = ModelConfig.parse(resolve_role(spec, role))
        if price_of(model) is None:
            raise ValueError(f"--max-cost-usd: the {role} {model.model} has no known price; "
                             f"add ?price_in=USD&price_out=USD (per million tokens) to --{role}")
