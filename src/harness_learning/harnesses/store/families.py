"""The execution log's record families, one small protocol each: versions, evaluations,
proposals, decisions, events and spend. `base.LogStore` composes them into the store a run
holds, as LangGraph's `BaseCheckpointSaver` is one narrow interface.

Why split: a reader (or a function that needs only part of the log, such as the run memory
reading proposals) sees one family's few methods, and a new backend sees what it must write.
Methods marked abstract are a backend's to implement; the others are read or written through
those, once, here or in `LogStore` (when they join two families, as `lineage` does).

Async callers (the adapter's nodes) use the `a`-prefixed names. They are not written by hand:
`in_thread` makes each from its sync method, which runs in a worker thread, as the backends'
drivers (sqlite3, psycopg's sync connection) block.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from harness_learning.harnesses.results import UNSCORED, ProblemResult
from harness_learning.harnesses.store.records import (
    Decision,
    Evaluation,
    Event,
    LineageStep,
    Outcome,
    Proposal,
    ProposalGroup,
    Version,
)

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

UNFINISHED_KINDS: frozenset[str] = UNSCORED
"""Error kinds of evaluations that a resumed run should redo (not the harness's doing)."""


def in_thread(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of a store method: the same arguments and result, the call made in a
    worker thread. The method is looked up on the store when called, so a backend's override
    (or a subclass's, as the lab's traced store wraps `_put_decision`) is the one that runs."""
    name = method.__name__

    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self, name), *args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"a{name}"
    twin.__doc__ = f"`{name}`, awaited (run in a worker thread)."
    return twin


class VersionLog(Protocol):
    """Harness versions, content-addressed by the sha256 of their source, with parent links."""

    @abstractmethod
    def put_version(
        self, source: str, parent: str | None = None, round_: int = 0, note: str = ""
    ) -> str:
        """Store a source under its sha256 (idempotent: the first record of a source stays)."""

    @abstractmethod
    def get_version(self, sha: str) -> Version | None: ...

    @abstractmethod
    def iter_versions(self) -> Iterator[Version]:
        """In insertion order."""

    def get_version_source(self, sha: str) -> str:
        version = self.get_version(sha)
        if version is None:
            raise KeyError(f"no harness version {sha[:12]} in the log")
        return version.source

    aput_version = in_thread(put_version)
    aget_version_source = in_thread(get_version_source)


class EvaluationLog(Protocol):
    """One problem's `ProblemResult` per row, keyed by (sha, purpose, round, problem_id).
    `put_results` and `get_results` are what the evaluator uses: results go in and come back
    equal; `put_evaluations` takes whole records as they are (an import keeps their run id)."""

    @abstractmethod
    def put_evaluations(self, evaluations: Iterable[Evaluation]) -> None:
        """Upsert on (sha, purpose, round, problem_id): a re-run replaces the earlier row."""

    @abstractmethod
    def iter_evaluations(
        self, sha: str | None = None, purpose: str | None = None, round: int | None = None
    ) -> Iterator[Evaluation]:
        """In insertion order, filtered by whichever of the keys are given."""

    @abstractmethod
    def put_results(self, sha: str, purpose: str, round_: int,
                    results: Iterable[ProblemResult]) -> None:
        """Store several results in one transaction, under the run's id (`LogStore`)."""

    def get_results(
        self, sha: str, ids: Iterable[str], purpose: str, redo_kinds: Iterable[str] = UNFINISHED_KINDS
    ) -> dict[str, ProblemResult]:
        """Finished results of `sha` on `ids` for `purpose`, from any round (the latest row
        wins), as they were put. Rows whose error kind is in `redo_kinds` count as not
        finished."""
        wanted, redo = set(ids), set(redo_kinds)
        out: dict[str, ProblemResult] = {}
        for ev in self.iter_evaluations(sha=sha, purpose=purpose):
            if ev.problem_id in wanted and ev.result.error_kind not in redo:
                out[ev.problem_id] = ev.result
        return out

    aput_results = in_thread(put_results)
    aget_results = in_thread(get_results)


class ProposalLog(Protocol):
    """One Proposer completion or operator candidate each, keyed `r{round}-c{index}`: put once
    when it is drawn (`records.new_proposal`), settled once with the judge's `Outcome`."""

    @abstractmethod
    def put_proposal(self, proposal: Proposal) -> str:
        """Upsert by id; returns the id."""

    @abstractmethod
    def settle_proposal(self, proposal_id: str, sha: str | None, outcome: Outcome) -> None:
        """Write the judge's verdict on a stored proposal, with the version its edit made
        (`sha`, None when none was stored). A proposal is settled once: a later call (a node
        re-run after a crash judges the same completion again) leaves the first verdict as
        it is. KeyError if there is no such proposal."""

    @abstractmethod
    def get_proposal(self, proposal_id: str) -> Proposal | None:
        """By id (the adapter's are `records.proposal_id(round, index)`)."""

    @abstractmethod
    def iter_proposals(self, round: int | None = None) -> Iterator[Proposal]:
        """In insertion order."""

    def iter_proposal_groups(self, round: int | None = None) -> Iterator[ProposalGroup]:
        """Proposals grouped by the prompt they answered, groups in order of first sample."""
        groups: dict[str, ProposalGroup] = {}
        for p in self.iter_proposals(round):
            group = groups.get(p.group_id)
            if group is None:
                group = groups[p.group_id] = ProposalGroup(p.group_id, p.round, p.prompt, [])
            group.proposals.append(p)
        yield from groups.values()

    aput_proposal = in_thread(put_proposal)
    asettle_proposal = in_thread(settle_proposal)
    aget_proposal = in_thread(get_proposal)


class DecisionLog(Protocol):
    """One decision per round (upserted by round), and the adopted chain read from them."""

    def put_decision(self, decision: Decision | None = None, /, **fields: Any) -> None:
        """Upsert by round. Either a `Decision` or its fields (`round_` for the round)."""
        if decision is None:
            if "round_" in fields:
                fields["round"] = fields.pop("round_")
            decision = Decision(**fields)
        self._put_decision(decision)

    @abstractmethod
    def _put_decision(self, decision: Decision) -> None: ...

    @abstractmethod
    def iter_decisions(self) -> Iterator[Decision]:
        """By round."""

    @abstractmethod
    def lineage(self) -> list[LineageStep]:
        """The adopted chain, round 0 the seed (`LogStore.lineage`: it reads versions and
        evaluations too)."""

    aput_decision = in_thread(put_decision)
    alineage = in_thread(lineage)


class EventLog(Protocol):
    """An append-only journal of what happened, numbered in commit order."""

    @abstractmethod
    def append_event(self, kind: str, payload: dict[str, Any] | None = None) -> int:
        """Append to the event stream; returns its sequence number."""

    @abstractmethod
    def iter_events(self, after_seq: int = 0, kinds: Iterable[str] | None = None) -> Iterator[Event]:
        """Events after `after_seq`, in order, of `kinds` when given."""

    aappend_event = in_thread(append_event)


class SpendLog(Protocol):
    """The run's one ledger: what it has used, read from the other families' records, and the
    one writer of what no other record holds, the price of each Proposer call."""

    @abstractmethod
    def spent(self) -> dict[str, Any]:
        """What the run has used so far (`harnesses.store.spend.KEYS`): solver_calls,
        solver_tokens, solver_cost_usd, proposer_calls, proposer_tokens, proposer_cost_usd,
        and tokens and cost_usd of both together. The adapter checks its budgets on it."""

    @abstractmethod
    def record_proposer_cost(self, proposal_id: str, round_: int, cost_usd: float | None) -> None:
        """Log the price of one Proposer call made for `proposal_id` (nothing for an unpriced
        or free one); every call paid for is recorded, a replaced sample's too."""

    aspent = in_thread(spent)
    arecord_proposer_cost = in_thread(record_proposer_cost)
