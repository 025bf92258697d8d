"""The round benchmark's parts on a tiny round: real sandbox, real client, simulated endpoint."""

from __future__ import annotations

import asyncio

from harness_learning.harnesses.compiler import check_source
from harness_learning.harnesses.llm import SimServer
from harness_learning_lab.bench.round import (
    CALLS,
    SHARED_CALLS,
    BenchTask,
    candidate_source,
    run_round,
)


def test_candidates_are_valid_and_share_only_their_first_calls():
    a, b = candidate_source(0), candidate_source(1)
    check_source(a)
    assert a != b and a.replace("Variant 0", "Variant 1") == b


def test_a_tiny_round_counts_shared_calls_once(tmp_path):
    with SimServer(latency_s=0.01, slots=16) as url:
        row = asyncio.run(run_round(url, 0.01, candidates=2, problems=3, slots=16,
                                    run_dir=tmp_path))
    unique = 2 * 3 * (CALLS - SHARED_CALLS) + 3 * SHARED_CALLS
    assert row["harness_calls"] == 2 * 3 * CALLS
    assert row["sent"] == unique and row["cache_hits"] == row["harness_calls"] - unique
    assert len(row["worker_start_ms"]) == 2 and row["parent_cpu_s"] > 0
    assert row["ideal_s"] > 0 and row["wall_s"] > 0
    assert len(BenchTask(3).dev()) == 3


def test_bridge_probe_runs_past_the_per_problem_call_cap():
    """The probe is one long problem of pings: it must not be stopped by the per-problem call
    caps (the Solver cap once left the bench with no laps and an IndexError)."""
    from harness_learning.harnesses.sandbox import Limits
    from harness_learning_lab.bench.round import bridge_laps

    calls = max(Limits().llm_calls_per_problem, Limits().tool_calls_per_problem) + 16
    laps = asyncio.run(bridge_laps(1, calls))
    assert len(laps) == calls and all(lap > 0 for lap in laps)
