"""The adapter's own spans (`AdaptConfig.trace`): one per round, with one per node run inside
it, the candidates' among them with their verdicts.

A round outlives any one node (sample, evaluate_current, the candidates, race, merge,
select), so its span is started by the round's first node and ended by `select` with the
decision, or by a node that fails. Each node's span is current while the node runs: the
Proposer's calls nest under their candidate, and the Solver's calls under the node that
evaluated them (the sandbox serves each call in the context of the run that made it); the
`merge` span carries its merged candidate's verdict, as a candidate's does. Spans are made
through `harnesses.tracing.Tracer`; no code here runs when tracing is off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.slots import Slot
from harness_learning.harnesses.tracing import Tracer, clean

Step = Callable[[Any], Awaitable[dict]]
ROUND_NODES = frozenset({"sample", "evaluate_current", "candidate", "race", "merge", "select"})
CANDIDATE_FACTS = ("origin", "sha", "parsed", "applied", "valid", "invalid_kind",
                   "selection_score", "completed_fraction", "reward")
"""What a candidate's span says of it, from its `CandidateView`."""


class RunSpans:
    """The open round spans of one run, and the node spans within them."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.rounds: dict[int, Any] = {}

    async def node(self, name: str, state: Mapping[str, Any], step: Step) -> dict:
        """Run node `name` on `state` in its span (under its round's, if it has a round)."""
        round_ = state.get("round") if name in ROUND_NODES else None
        parent = self.round_span(round_) if isinstance(round_, int) else None
        start = {"round": round_}
        if name == "candidate":
            slot = state.get("slot")
            start.update(index=state.get("index"),
                         origin=Slot.from_dict(slot).arm if slot else state.get("operator"),
                         parent_sha=state.get("current_sha"))
        try:
            with self.tracer.span(name, parent, **start) as span:
                update = await step(state)
                span.set_attributes(clean(facts(name, update)))
        except Exception as exc:
            if isinstance(round_, int) and not _bubbles(exc):
                self.end_round(round_, {"error": f"{type(exc).__name__}: {exc}"[:500]})
            raise
        if name == "select" and isinstance(round_, int):
            self.end_round(round_, facts("round", update))
        return update

    def round_span(self, round_: int) -> Any:
        """Round `round_`'s span, started now if no node of the round has run yet (a resumed
        run starts one mid-round)."""
        span = self.rounds.get(round_)
        if span is None:
            span = self.rounds[round_] = self.tracer.start(f"round {round_}", round=round_)
        return span

    def end_round(self, round_: int, attributes: dict[str, Any]) -> None:
        span = self.rounds.pop(round_, None)
        if span is not None:
            span.set_attributes(clean(attributes))
            span.end()

    def close(self) -> None:
        """End what is still open (a run stopped mid-round)."""
        for round_ in list(self.rounds):
            self.end_round(round_, {"stopped": True})


class TracedRun(Protocol):
    """What `run_spans` reads of a run's context (`AdapterContext`, which builds its spans
    from this module and so is not imported here): its settings and its spans, if traced."""

    @property
    def config(self) -> AdaptConfig: ...

    @property
    def spans(self) -> RunSpans | None: ...


def run_spans(ctx: TracedRun, updates: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The run's stream of graph updates, inside its "adapt" span when traced (the round
    spans nest under it; rounds a stop left open are ended with it); else `updates` itself."""
    spans = ctx.spans
    if spans is None:
        return updates

    async def traced() -> AsyncIterator[Any]:
        cfg = ctx.config
        try:
            with spans.tracer.span("adapt", task=cfg.task, run_dir=str(cfg.path),
                                   solver=cfg.solver, proposer=cfg.proposer, policy=cfg.policy):
                async for chunk in updates:
                    yield chunk
        finally:
            spans.close()

    return traced()


def facts(name: str, update: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a node's update gives its span (or, for "round", the round's span)."""
    if name in ("candidate", "merge"):  # the merge's update holds its candidate, or nothing
        views = [*(update.get("candidates") or []), *(update.get("drafts") or [])]
        view = views[0] if views else {}
        return {key: view.get(key) for key in CANDIDATE_FACTS}
    if name == "evaluate_current":
        return {"feedback_score": update.get("feedback_score"),
                "current_selection_score": update.get("current_selection_score")}
    if name == "round":
        view = (update.get("rounds") or [{}])[-1]
        spent = update.get("spent") or {}
        return {"decision.adopted": view.get("adopted"), "decision.reason": view.get("decision"),
                "decision.chosen_sha": view.get("chosen_sha"),
                "decision.approved": view.get("approved"),
                "current_selection_score": view.get("current_selection_score"),
                "candidates": len(view.get("candidates") or []),
                **{f"spent.{key}": value for key, value in spent.items()}}
    if name == "finish":
        return {"stop_reason": update.get("stop_reason")}
    return {}


def _bubbles(exc: BaseException) -> bool:
    """LangGraph's interrupt (the approval gate): the node runs again on resume."""
    return any(c.__name__ == "GraphBubbleUp" for c in type(exc).__mro__)
