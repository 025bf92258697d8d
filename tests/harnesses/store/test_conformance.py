"""The `LogStore` conformance suite (`harnesses.store.conformance`), run against every backend
here: SQLite, PostgreSQL (the session's throwaway server) and the JSON-lines double. A new
backend adds itself to `BACKENDS` (given the test's request, for a server fixture, a callable
from a run directory to an open store) and must pass every check unchanged; a third-party one
runs the same `CHECKS` against its own factory.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from jsonl_store import JsonlLogStore

from harness_learning.harnesses.store import LogStore, SQLiteLogStore
from harness_learning.harnesses.store import families as fam
from harness_learning.harnesses.store.conformance import CHECKS, ConformanceError


def postgres(request: pytest.FixtureRequest) -> Callable[[Path], LogStore]:
    """A run directory's log in the session's throwaway PostgreSQL server (tests/conftest.py)."""
    from harness_learning.harnesses.store.postgres import PostgresLogStore

    url = request.getfixturevalue("postgres_url")
    return lambda run_dir: PostgresLogStore(run_dir, url)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Callable[[Path], LogStore]]] = {
    "sqlite": lambda _request: SQLiteLogStore,
    "jsonl": lambda _request: JsonlLogStore,
    "postgres": postgres,
}
"""Backend name -> (the test's request -> a callable from a run directory to an open store)."""


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_every_backend_conforms(backend, check, request, tmp_path):
    open_backend = BACKENDS[backend](request)
    check(lambda: open_backend(tmp_path / "run"))


class ForgetfulStore(SQLiteLogStore):
    """A backend that loses every event after the first: the suite must notice."""

    def append_event(self, kind, payload=None):
        if not list(self.iter_events()):
            return super().append_event(kind, payload)
        return 1


def test_the_suite_fails_a_backend_that_breaks_the_contract(tmp_path):
    (events,) = [c for c in CHECKS if c.__name__ == "events_append_in_order_and_filter"]
    with pytest.raises(ConformanceError, match="sequence ascending, distinct"):
        events(lambda: ForgetfulStore(tmp_path / "run"))


FAMILIES = (fam.VersionLog, fam.EvaluationLog, fam.ProposalLog, fam.DecisionLog, fam.EventLog,
            fam.SpendLog)
RUN_RECORD = {"init_run", "get_run", "close"}


def test_the_store_is_its_families_and_the_run_record():
    """Every public method of the store belongs to one record family's protocol (or is the run
    record): a method added to `LogStore` alone would widen it past what the families say."""
    owners: dict[str, list[str]] = {}
    for family in FAMILIES:
        for name in vars(family):
            if not name.startswith("_") and callable(vars(family)[name]):
                owners.setdefault(name, []).append(family.__name__)
    public = {n for n, _ in inspect.getmembers(LogStore, callable) if not n.startswith("_")}
    assert public - set(owners) == RUN_RECORD
    assert all(len(families) == 1 for families in owners.values()), owners
    assert all(len([n for n in vars(f) if not n.startswith("__")]) <= 12 for f in FAMILIES)


def test_each_async_twin_awaits_its_sync_method():
    twins = {n for n in dir(LogStore) if n.startswith("a") and n[1:] in dir(LogStore)
             and n != "append_event"}
    assert twins == {"aput_version", "aget_version_source", "aput_results", "aget_results",
                     "aget_proposal", "aput_proposal", "asettle_proposal", "aput_decision",
                     "alineage", "aappend_event", "aspent", "arecord_proposer_cost"}
    for name in twins:
        assert inspect.iscoroutinefunction(getattr(LogStore, name)), name
        assert getattr(LogStore, name).__name__ == name


class CountingStore(SQLiteLogStore):
    """A subclass that wraps a write, as the lab's traced store does: its twin must run it."""

    def __init__(self, run_dir):
        super().__init__(run_dir)
        self.threads: list[int] = []

    def _put_decision(self, decision):
        self.threads.append(threading.get_ident())
        super()._put_decision(decision)


def test_a_twin_runs_the_subclass_method_off_the_event_loop(tmp_path):
    async def decide(store: CountingStore) -> int:
        await store.aput_decision(round_=1, current_sha="a", chosen_sha="b", policy="strict")
        return threading.get_ident()

    with CountingStore(tmp_path) as store:
        loop_thread = asyncio.run(decide(store))
        assert len(store.threads) == 1 and store.threads[0] != loop_thread
        assert [d.chosen_sha for d in store.iter_decisions()] == ["b"]
