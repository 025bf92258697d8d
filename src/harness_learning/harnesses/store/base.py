"""`LogStore`: the execution log a run holds, composed of one small protocol per record family
(`families.py`: versions, evaluations, proposals, decisions, events, spend) and the run record,
shaped like LangGraph's `BaseCheckpointSaver`: sync methods a backend implements, async twins
made from them (`families.in_thread`), and a conformance suite any backend can run
(`harnesses.store.conformance`). Every write method is one committed transaction.
See docs/ARCHITECTURE.md, "The store".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store.families import (
    UNFINISHED_KINDS,
    DecisionLog,
    EvaluationLog,
    EventLog,
    ProposalLog,
    SpendLog,
    VersionLog,
)
from harness_learning.harnesses.store.records import Decision, Evaluation, LineageStep, RunMeta
from harness_learning.harnesses.store.spend import PROPOSER_COST_EVENT, spent_from

__all__ = ["UNFINISHED_KINDS", "LogStore", "LogStoreError", "RunLocked", "SchemaVersionError",
           "StoreUnreachable"]


class LogStoreError(Exception):
    """The store cannot be opened or written as asked."""


class SchemaVersionError(LogStoreError):
    """The run directory was written by an incompatible schema version; nothing was changed."""


class RunLocked(LogStoreError):
    """Another process drives the run (a PostgreSQL run's advisory lock is held)."""


class StoreUnreachable(LogStoreError):
    """The store's server did not answer (a PostgreSQL log): what was committed is kept, and
    the command can be run again once the server is back."""


class LogStore(VersionLog, EvaluationLog, ProposalLog, DecisionLog, EventLog, SpendLog, ABC):
    """One run's execution log: what the loop did, kept so that a run resumes, reports and
    trains from it (`records.py` documents each field). The record families' protocols say
    what each holds; this class adds the run record (`init_run`, `get_run`) and what reads or
    writes across families: `put_results` (the run's id on each evaluation), `lineage`
    (decisions, versions and evaluations), `spent` (read from all of them; a SQL backend sums
    it in the database) and `record_proposer_cost` (the one writer of the Proposer's price)."""

    # -- the run -----------------------------------------------------------------------------
    @abstractmethod
    def init_run(self, config: dict[str, Any], run_id: str | None = None) -> RunMeta:
        """Record the run once; a resumed run gets the stored metadata back unchanged."""

    @abstractmethod
    def get_run(self) -> RunMeta | None: ...

    def close(self) -> None:  # noqa: B027 - optional for backends without resources
        """Release resources."""

    def __enter__(self) -> LogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- across families ---------------------------------------------------------------------
    def put_results(self, sha: str, purpose: str, round_: int,
                    results: Iterable[ProblemResult]) -> None:
        """Store several results in one transaction; `get_results` gives them back equal."""
        run = self.get_run() or self.init_run({})
        self.put_evaluations([Evaluation(run.run_id, sha, purpose, round_, r) for r in results])

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

    def spent(self) -> dict[str, Any]:
        """Summed here from every record (`spend.spent_from`); the SQL backends sum the same
        in the database, so a report need not read every trace."""
        return spent_from(self.iter_evaluations(), self.iter_proposals(), self.iter_events())

    def record_proposer_cost(self, proposal_id: str, round_: int, cost_usd: float | None) -> None:
        if isinstance(cost_usd, int | float) and not isinstance(cost_usd, bool) and cost_usd > 0:
            self.append_event(PROPOSER_COST_EVENT, {"proposal_id": proposal_id, "round": round_,
                                                    "cost_usd": float(cost_usd)})


def _logged(decision: Decision, key: str) -> float | None:
    """A score the adapter logged with its decision. Preferred to re-averaging evaluations:
    results reused from earlier rounds carry those rounds' numbers."""
    scores = decision.scores if isinstance(decision.scores, dict) else {}
    value = scores.get(key)
    return float(value) if isinstance(value, int | float) else None
