"""Evaluation integrity beside the hostile catalogue. Every hostile body (limits per candidate,
the bridge's bounds, infrastructure claims, no gold inside, the kernel surface) lives once, in
`harness_learning_lab.reliability.hostile_integrity_cases`, and tests/lab/reliability/
test_hostile.py runs each as its own test; here are the checks that are not hostile code: the
named fallbacks, the head a stored trace keeps, and a real infrastructure failure."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.sandbox import Limits
from harness_learning.harnesses.sandbox.local import LocalBackend

from .conftest import ScriptedToolbox, node_harness, run_alone

pytestmark = pytest.mark.reliability


# -- limits per candidate -------------------------------------------------------------------

def test_fallbacks_are_named_where_no_cgroup_can_be_made():
    from harness_learning.harnesses.sandbox import sandbox_fallbacks

    missing = sandbox_fallbacks(LocalBackend(use_cgroup=False))
    assert {"cgroup_memory", "cgroup_pids"} <= set(missing)
    assert "per process" in missing["cgroup_memory"]


# -- the bridge -----------------------------------------------------------------------------

def test_stored_traces_keep_the_head_of_long_arguments():
    limits = Limits(memory_mb=1536, pids=32, trace_arg_chars=1000, problem_timeout_s=30.0)
    outcome, _ = run_alone(node_harness("""
answer = tools.llm("z" * 50000)
"""), limits, ScriptedToolbox(reply=lambda args: "r" * 20000))
    call = outcome.calls[0]
    assert len(call.args["messages"]) < 1100 and len(call.result) < 1100
    assert call.meta["truncated"] == {"args_chars": 49000, "result_chars": 19000}


# -- infrastructure is the parent's call ----------------------------------------------------

def test_a_real_infrastructure_failure_stays_unscored(sandbox):
    class InfraError(Exception):
        kind = "infra"

    outcome = sandbox.run_one(node_harness("answer = tools.llm('hi')"),
                              toolbox=ScriptedToolbox(raises=InfraError("endpoint down")))
    assert outcome.error_kind == "infra", outcome
