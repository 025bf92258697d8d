"""Each limit that ends a problem is named by resource, in its error kind and its error text,
from a real sandbox: memory (the address-space rlimit and the candidate's memory cgroup), the
process limit, CPU time and wall time. All are the harness's doing: scored 0, never unscored."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.results import HARNESS_FAULTS, UNSCORED, ErrorKind
from harness_learning.harnesses.sandbox import Limits
from harness_learning.harnesses.toolbox import Toolbox

from .conftest import node_harness, run_alone

pytestmark = pytest.mark.reliability


def test_the_resource_kinds_are_the_harnesss_fault():
    for kind in (ErrorKind.MEMORY, ErrorKind.PIDS, ErrorKind.TIMEOUT):
        assert kind in HARNESS_FAULTS and kind not in UNSCORED


def test_an_allocation_past_the_address_space_is_reported_as_memory():
    limits = Limits(memory_mb=768, pids=32, problem_timeout_s=60.0)
    outcome, alive = run_alone(node_harness("hog = bytearray(4 << 30)\nanswer = 'held'"), limits)
    assert outcome.error_kind == "memory" and "Limits.memory_mb" in outcome.error, outcome
    assert alive  # the worker itself carries on


def test_the_memory_cgroup_killing_the_worker_is_reported_as_memory(protections):
    """Pages written to the scratch tmpfs are charged to the candidate's memory cgroup but not
    to any address space: only the cgroup's OOM killer stops them (`oom_kill` on v1 and v2)."""
    if not protections["cgroup_memory"]:
        pytest.skip("no memory cgroup can be made here")
    limits = Limits(memory_mb=384, scratch_mb=2048, pids=32, problem_timeout_s=120.0)
    outcome, alive = run_alone(node_harness("""
for i in range(1536):
    with open(f"fill{i // 64}", "ab") as f:
        f.write(b"x" * (1 << 20))
answer = "wrote it all"
"""), limits)
    assert not alive
    assert outcome.error_kind == "memory", outcome
    assert "Limits.memory_mb (384 MB)" in outcome.error and "killed" in outcome.error, outcome


def test_a_fork_bomb_that_breaks_the_harness_is_reported_as_pids(protections):
    if not protections["cgroup_pids"]:
        pytest.skip("no pids cgroup can be made here")
    limits = Limits(memory_mb=1536, pids=24, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness("""
for _ in range(200):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
answer = "forked them all"
"""), limits)
    assert outcome.error_kind == "pids", outcome
    assert "Limits.pids (24" in outcome.error and "BlockingIOError" in outcome.error, outcome


def test_a_busy_loop_past_the_cpu_limit_is_reported_as_cpu():
    limits = Limits(cpu_s=4, memory_mb=1536, pids=32, problem_timeout_s=60.0)
    outcome, alive = run_alone(node_harness("answer = sum(range(10 ** 13))"), limits)
    assert not alive
    assert outcome.error_kind == "timeout", outcome
    assert outcome.error.startswith("CPU limit") and "Limits.cpu_s (4 s" in outcome.error, outcome


def test_a_sleep_past_the_wall_limit_is_reported_as_wall_time():
    limits = Limits(memory_mb=1536, pids=32, problem_timeout_s=2.0)
    outcome, _ = run_alone(node_harness("time.sleep(30)\nanswer = 'woke'"), limits)
    assert outcome.error_kind == "timeout", outcome
    assert outcome.error.startswith("wall-clock limit"), outcome
    assert "Limits.problem_timeout_s" in outcome.error, outcome


def test_a_python_call_killed_for_its_candidates_memory_says_memory(protections):
    if not protections["cgroup_memory"]:
        pytest.skip("no memory cgroup can be made here")
    limits = Limits(memory_mb=768, python_memory_mb=2048, pids=64, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness("""
out = tools.python("b = b'x' * (1200 << 20)\\nprint('held')", 30)
answer = str(out.error)
"""), limits, Toolbox(python_limits=limits))
    assert outcome.answer.startswith("memory limit"), outcome
    assert "Limits.python_memory_mb" in outcome.answer, outcome


def test_the_counters_are_read_from_the_v1_and_the_v2_files(tmp_path):
    """This machine has one hierarchy; the other one's files are checked in their own format."""
    from harness_learning.harnesses.sandbox.cgroups import Group, Usage

    memory, pids, cpu = (tmp_path / "v1" / kind / "g" for kind in ("memory", "pids", "cpu"))
    files = {memory / "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
             memory / "memory.failcnt": "3\n", pids / "pids.events": "max 5\n",
             cpu / "cpu.stat": "nr_periods 9\nnr_throttled 7\nthrottled_time 100\n"}
    v2 = tmp_path / "v2" / "g"
    files |= {v2 / "memory.events": "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n",
              v2 / "pids.events": "max 6\n", v2 / "cpu.stat": "usage_usec 1\nnr_throttled 8\n"}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert Group([memory, pids, cpu], 1).usage() == Usage(1, 3, 5, 7)
    assert Group([v2], 2).usage() == Usage(2, 4, 6, 8)
    assert Group([tmp_path / "absent"], 2).usage() == Usage()
