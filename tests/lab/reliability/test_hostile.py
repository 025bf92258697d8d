"""Hostile harness code through the evaluator: every case is contained, checked from outside
(host files, listeners, a sentinel process, the planted log store, the score) and recorded
with a reason, on each sandbox backend. The catalogue runs once per backend for the module;
each case is its own test."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from docker_engine import require_engine

from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.sandbox.backend import get_backend
from harness_learning_lab.reliability.hostile import CASES, run_catalogue

pytestmark = pytest.mark.reliability


@pytest.fixture(scope="module", params=["local", "docker"])
def rows(request, tmp_path_factory):
    """The catalogue's rows on one backend, its workers and `tools.python` calls alike: both
    are held to the same cases (Docker where an engine with the sandbox image answers)."""
    if request.param == "docker":
        require_engine()
    server = SimServer(latency_s=0.01)
    server.start()
    try:
        rows = asyncio.run(run_catalogue(tmp_path_factory.mktemp("hostile"), server,
                                         backend=get_backend(request.param)))
    finally:
        server.stop()
    assert all(r.get("backend", request.param) == request.param for r in rows)
    return {r["case"]: r for r in rows}


def test_catalogue_is_broad():
    assert len({c.name for c in CASES}) == len(CASES) >= 45
    counts = Counter(c.category for c in CASES)
    assert counts["escape"] >= 12 and counts["resource"] >= 8 and counts["reward_hacking"] >= 6
    for integrity_class in ("candidate_limits", "bridge_bounds", "infra_claims", "no_gold_inside",
                            "kernel_surface"):
        assert counts[integrity_class] >= 3, integrity_class
    for edge_class in ("judge_metric", "handed_files", "printed_text", "budget"):
        assert counts[edge_class] >= 1, edge_class


def test_every_case_has_a_check_saying_what_contained_means():
    from harness_learning_lab.reliability.hostile import CHECKS

    assert all(c.check in CHECKS for c in CASES)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_is_contained_and_recorded(rows, name):
    row = rows[name]
    if row.get("skipped"):
        pytest.skip(row["skipped"])
    assert row["contained"], row
    assert row["recorded"] and row["reason"], row


def test_no_worker_outlives_the_catalogue(rows):
    assert all(r.get("leftover_workers", 0) == 0 for r in rows.values())
