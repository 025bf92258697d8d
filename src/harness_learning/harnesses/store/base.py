"""`LogStore`: the execution log's persistence interface, shaped like LangGraph's
`BaseCheckpointSaver` (sync methods to implement, async twins that default to a worker thread).

Backends implement the abstract methods; reading helpers (`lineage`, `iter_proposal_groups`,
`get_results`) and the async twins are shared. Every write method is one committed
transaction. The interface holds what callers use and no more: an async twin exists only where
an async caller needs one. Every backend passes tests/harnesses/store/test_conformance.py.
See docs/ARCHITECTURE.md, "The store".
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any

from harness_learning.harnesses.results import UNSCORED, ProblemResult
from harness_learning.harnesses.store.records import (
    Decision,
    Evaluation,
    Event,
    LineageStep,
    Proposal,
    ProposalGroup,
    RunMeta,
    Version,
    prompt_group_id,
    proposal_id,
    to_jsonable,
)
from harness_learning.harnesses.store.spend import PROPOSER_COST_EVENT

UNFINISHED_KINDS: frozenset[str] = UNSCORED
"""Error kinds of evaluations that a resumed run should redo (not the harness's doing)."""


class LogStoreError(Exception):
    """The store cannot be opened or written as asked."""


class SchemaVersionError(LogStoreError):
    """The run directory was written by an incompatible schema version; nothing was changed."""


class RunLocked(LogStoreError):
    """Another process drives the run (a PostgreSQL run's advisory lock is held)."""


class StoreUnreachable(LogStoreError):
    """The store's server did not answer (a PostgreSQL log): what was committed is kept, and
    the command can be run again once the server is back."""


class LogStore(ABC):
    """One run's execution log: what the loop did, kept so that a run resumes, reports and
    trains from it. Six record families (`records.py` documents each field), each written and
    read one way:

    - the run (`init_run`, `get_run`): its id, config and schema version, once;
    - harness versions (`put_version`, `get_version`, `iter_versions`), keyed by source sha;
    - evaluations, one problem's `ProblemResult` per row: the evaluator's results for one
      version, purpose and round go in through `put_results` and come back equal from
      `get_results`; `put_evaluations`, the backends' one write, takes whole `Evaluation`
      records as they are (an imported log keeps its run id and times);
    - proposals, one Proposer completion or operator candidate each, drafted as it arrives
      (`put_proposal_draft`) and completed by the judge's outcome (`update_proposal`);
    - decisions, one per round (`put_decision`), from which `lineage` is read;
    - events, an append-only journal (`append_event`, `iter_events`).

    `spent()` is the run's one ledger, read from those records. Async twins exist only where
    an async caller needs them."""

    # -- run ---------------------------------------------------------------------------------
    @abstractmethod
    def init_run(self, config: dict[str, Any], run_id: str | None = None) -> RunMeta:
        """Record the run once; a resumed run gets the stored metadata back unchanged."""

    @abstractmethod
    def get_run(self) -> RunMeta | None: ...

    # -- versions ----------------------------------------------------------------------------
    @abstractmethod
    def put_version(
        self, source: str, parent: str | None = None, round_: int = 0, note: str = ""
    ) -> str:
        """Store a source under its sha256 (idempotent: the first record of a source stays)."""

    @abstractmethod
    def get_version(self, sha: str) -> Version | None: ...

    @abstractmethod
    def iter_versions(self) -> Iterator[Version]: ...

    def get_version_source(self, sha: str) -> str:
        version = self.get_version(sha)
        if version is None:
            raise KeyError(f"no harness version {sha[:12]} in the log")
        return version.source

    # -- evaluations -------------------------------------------------------------------------
    @abstractmethod
    def put_evaluations(self, evaluations: Iterable[Evaluation]) -> None:
        """Upsert on (sha, purpose, round, problem_id): a re-run replaces the earlier row."""

    @abstractmethod
    def iter_evaluations(
        self, sha: str | None = None, purpose: str | None = None, round: int | None = None
    ) -> Iterator[Evaluation]: ...

    def put_results(self, sha: str, purpose: str, round_: int,
                    results: Iterable[ProblemResult]) -> None:
        """Store several results in one transaction; `get_results` gives them back equal."""
        run = self.get_run() or self.init_run({})
        self.put_evaluations([Evaluation(run.run_id, sha, purpose, round_, r) for r in results])

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

    @abstractmethod
    def spent(self) -> dict[str, Any]:
        """What the run has used so far (`harnesses.store.spend.KEYS`): solver_calls,
        solver_tokens, solver_cost_usd, proposer_calls, proposer_tokens, proposer_cost_usd,
        and tokens and cost_usd of both together. The adapter checks its budgets on it."""

    # -- proposals ---------------------------------------------------------------------------
    @abstractmethod
    def put_proposal(self, proposal: Proposal) -> str:
        """Upsert by id; returns the id."""

    @abstractmethod
    def update_proposal(self, proposal_id: str, **fields: Any) -> None:
        """Set some fields of a stored proposal (KeyError if there is none)."""

    @abstractmethod
    def get_proposal(self, proposal_id: str) -> Proposal | None:
        """By id (the adapter's are `records.proposal_id(round, index)`)."""

    def put_proposal_draft(
        self, round_: int, index: int, messages: Any, completion: Any, edit_format: str,
        parent_sha: str | None = None, origin: str = "proposer",
    ) -> Proposal:
        """Log a fresh candidate (a `harnesses.llm.Completion`; `origin` says who wrote it:
        proposer, operator:NAME or merge) before it is judged."""
        proposal = Proposal(
            id=proposal_id(round_, index), round=round_, group_id=prompt_group_id(messages),
            prompt=to_jsonable(messages), completion=completion.text,
            finish_reason=completion.finish_reason, model=getattr(completion, "model", ""),
            edit_format=edit_format, prompt_tokens=getattr(completion, "prompt_tokens", 0),
            completion_tokens=getattr(completion, "completion_tokens", 0),
            latency_s=getattr(completion, "latency_s", 0.0),
            logprobs=getattr(completion, "logprobs", None), parent_sha=parent_sha,
            origin=origin, cost_usd=float(getattr(completion, "cost", 0.0) or 0.0),
        )
        cost = getattr(completion, "cost", None)
        if isinstance(cost, int | float) and cost > 0:  # logged first: the call was paid for
            self.append_event(PROPOSER_COST_EVENT, {"proposal_id": proposal.id, "round": round_,
                                                    "cost_usd": float(cost)})
        self.put_proposal(proposal)
        return self.get_proposal(proposal.id) or proposal

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

    # -- decisions and events ----------------------------------------------------------------
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
    def iter_decisions(self) -> Iterator[Decision]: ...

    def lineage(self) -> list[LineageStep]:
        """The adopted chain: the seed (round 0), then the version in force after each decided
        round, with its mean selection score measured in that round (None if unmeasured)."""
        decisions = list(self.iter_decisions())
        if decisions:
            seed = decisions[0].current_sha
        else:
            seed = next((v.sha for v in self.iter_versions() if v.parent_sha is None), None)
            if seed is None:
                return []
        first = decisions[0].round if decisions else 1
        seed_score = _logged(decisions[0], "current") if decisions else None
        steps = [LineageStep(0, seed, seed_score if seed_score is not None
                             else self._selection_score(seed, first))]
        for d in decisions:
            chosen = _logged(d, "chosen")
            steps.append(LineageStep(d.round, d.chosen_sha, chosen if chosen is not None
                                     else self._selection_score(d.chosen_sha, d.round)))
        return steps

    def _selection_score(self, sha: str, round_: int) -> float | None:
        scores = [e.result.score for e in self.iter_evaluations(sha, "selection", round_)
                  if e.result.score is not None]
        return sum(scores) / len(scores) if scores else None

    @abstractmethod
    def append_event(self, kind: str, payload: dict[str, Any] | None = None) -> int:
        """Append to the event stream; returns its sequence number."""

    @abstractmethod
    def iter_events(self, after_seq: int = 0, kinds: Iterable[str] | None = None) -> Iterator[Event]: ...

    def close(self) -> None:  # noqa: B027 - optional for backends without resources
        """Release resources."""

    def __enter__(self) -> LogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async twins -------------------------------------------------------------------------
    async def aput_version(
        self, source: str, parent: str | None = None, round_: int = 0, note: str = ""
    ) -> str:
        return await asyncio.to_thread(self.put_version, source, parent, round_, note)

    async def aget_version_source(self, sha: str) -> str:
        return await asyncio.to_thread(self.get_version_source, sha)

    async def aput_results(self, sha: str, purpose: str, round_: int,
                           results: list[ProblemResult]) -> None:
        await asyncio.to_thread(self.put_results, sha, purpose, round_, results)

    async def aget_results(
        self, sha: str, ids: Iterable[str], purpose: str, redo_kinds: Iterable[str] = UNFINISHED_KINDS
    ) -> dict[str, ProblemResult]:
        return await asyncio.to_thread(self.get_results, sha, list(ids), purpose, tuple(redo_kinds))

    async def aspent(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.spent)

    async def alineage(self) -> list[LineageStep]:
        return await asyncio.to_thread(self.lineage)

    async def aget_proposal(self, proposal_id: str) -> Proposal | None:
        return await asyncio.to_thread(self.get_proposal, proposal_id)

    async def aput_proposal_draft(self, **kwargs: Any) -> Proposal:
        return await asyncio.to_thread(lambda: self.put_proposal_draft(**kwargs))

    async def aupdate_proposal(self, proposal_id: str, **fields: Any) -> None:
        await asyncio.to_thread(lambda: self.update_proposal(proposal_id, **fields))

    async def aput_decision(self, decision: Decision | None = None, /, **fields: Any) -> None:
        await asyncio.to_thread(lambda: self.put_decision(decision, **fields))

    async def aappend_event(self, kind: str, payload: dict[str, Any] | None = None) -> int:
        return await asyncio.to_thread(self.append_event, kind, payload)


def _logged(decision: Decision, key: str) -> float | None:
    """A score the adapter logged with its decision. Preferred to re-averaging evaluations:
    results reused from earlier rounds carry those rounds' numbers."""
    scores = decision.scores if isinstance(decision.scores, dict) else {}
    value = scores.get(key)
    return float(value) if isinstance(value, int | float) else None
