"""One LLM candidate's attempts: each call to the Proposer, how it was asked, what it cost and
what the judge said of it.

A candidate may take several attempts (`repair.second_chances`: a resample for an edit that
changes nothing, a repair turn for an unusable answer). Every attempt is logged as a
`proposer_attempt` event, so nothing the Proposer wrote is lost. An attempt's event is written
when the next one starts (its text with it: a replaced answer is kept nowhere else) or, for the
answer kept, at the end, marked `kept` and without its text, which the proposal holds: a
completion is stored once. Every call is priced, a replaced one's too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_learning.evals.judge import Outcome
from harness_learning.graphs.adapter.budget import proposer_share
from harness_learning.harnesses.llm.completion import LOGPROB_PARAMS, Completion
from harness_learning.harnesses.llm.config import spec_params
from harness_learning.harnesses.llm.errors import InfraError, ModelRequestError
from harness_learning.harnesses.llm.ledger import used
from harness_learning.harnesses.store.records import proposal_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness_learning.graphs.adapter.context import AdapterContext

ATTEMPT_CHARS = 8_000
"""How much of a replaced attempt's text its event keeps."""

Messages = list[dict[str, str]]


async def refused_logprobs(ctx: AdapterContext, err: Exception) -> None:
    """The Proposer's endpoint refused the log-prob parameters (llama-cpp-python's server
    without every position's logits answers HTTP 500 'logprobs is not supported ...'): the
    run asks without them from now on and logs why once, rather than failing every call."""
    if not ctx.logprobs_refused:
        ctx.logprobs_refused = True
        await ctx.store.aappend_event("proposer_logprobs_refused", {"error": str(err)[:500]})


class ProposerAttempts:
    """The attempts of the candidate at (`payload["round"]`, `payload["index"]`), drawn from
    `proposer` with the run's parameters and judged by `check`."""

    def __init__(self, ctx: AdapterContext, payload: dict, proposer: Any,
                 check: Callable[..., Outcome], stops: list[str]) -> None:
        self.ctx, self.payload, self.proposer, self.check = ctx, payload, proposer, check
        self.stops = stops
        served = getattr(getattr(proposer, "config", None), "returns_logprobs", True)
        self.logprobs = LOGPROB_PARAMS if ctx.config.proposer_logprobs and served else {}
        self.sampled: list[Completion] = []
        self._pending: dict[str, Any] | None = None  # the last attempt's event, not yet written

    async def sample(self, messages: Messages, seed: int) -> Completion:
        """Draw one completion; an earlier attempt was replaced by it."""
        await self._write_pending(kept=False)
        asked = {} if self.ctx.logprobs_refused else self.logprobs
        params = {**asked, **self.ctx.config.proposer_params, **spec_params(self.proposer),
                  "seed": seed}
        if self.stops:
            params.setdefault("stop", self.stops)  # a stop of the user's own wins
        async with proposer_share(self.ctx, self.proposer, messages, params) as use:
            try:  # the share is held before the request is sent
                self.sampled.append(await self._call(messages, params))
            except (InfraError, ModelRequestError) as err:
                if not (asked and "logprob" in str(err).lower()):
                    raise
                await refused_logprobs(self.ctx, err)
                params = {k: v for k, v in params.items() if k not in LOGPROB_PARAMS}
                self.sampled.append(await self._call(messages, params))
            used(use, self.sampled[-1])
        return self.sampled[-1]

    async def judged(self, completion: Completion, attempt: str) -> Outcome:
        """The judge's static check of one attempt, kept for its event."""
        outcome = self.check(completion.text, completion.finish_reason,
                             self.ctx.config.edit_format)
        self._pending = {
            "round": self.payload["round"], "index": self.payload["index"], "attempt": attempt,
            "invalid_kind": outcome.invalid_kind, "completion": completion.text[:ATTEMPT_CHARS],
            "tokens": completion.prompt_tokens + completion.completion_tokens}
        return outcome

    async def close(self) -> None:
        """Write the kept attempt's event and price every call."""
        await self._write_pending(kept=True)
        pid = proposal_id(self.payload["round"], self.payload["index"])
        for paid in self.sampled:
            await self.ctx.store.arecord_proposer_cost(pid, self.payload["round"], paid.cost)

    async def _write_pending(self, kept: bool) -> None:
        if self._pending is None:
            return
        event, self._pending = self._pending, None
        if kept:
            del event["completion"]
        await self.ctx.store.aappend_event("proposer_attempt", {**event, "kept": kept})

    async def _call(self, messages: Messages, params: dict[str, Any]) -> Completion:
        tracer = getattr(self.ctx, "tracer", None)
        if tracer is None:
            return await self.proposer.acomplete(messages, **params)
        model = str(getattr(getattr(self.proposer, "config", None), "model", "proposer"))
        async with tracer.model_call("proposer", model, params, messages) as traced:
            traced.result = await self.proposer.acomplete(messages, **params)  # tokens, cost
        return traced.result
