"""Evaluation integrity and sandbox hardening, one group per class of escape: limits per
candidate (not per process), a bounded bridge whose reader survives any line, infrastructure
decided by the parent only, no gold inside the worker, and the kernel surface."""

from __future__ import annotations

import asyncio

import pytest

from harness_learning.harnesses.sandbox import Limits, Worker
from harness_learning.harnesses.sandbox.local import LocalBackend
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning_lab.reliability.hostile_integrity_cases import FIND_BRIDGE

from .conftest import TEST_LIMITS, ScriptedToolbox, node_harness

pytestmark = pytest.mark.reliability


def run_alone(source: str, limits: Limits, toolbox=None, timeout: float | None = None):
    """One problem in a worker of its own (these tests need limits the pool's workers lack)."""

    async def go():
        async with Worker(toolbox or ScriptedToolbox(), limits) as worker:
            await worker.load(source)
            outcome = await worker.run("p1", {"question": "2+2?"}, timeout)
            return outcome, worker.alive

    return asyncio.run(go())


# -- limits per candidate -------------------------------------------------------------------

def test_dev_shm_is_a_small_tmpfs(need_bwrap):
    limits = Limits(memory_mb=1536, pids=32, shm_mb=8, problem_timeout_s=30.0)
    outcome, _ = run_alone(node_harness("""
made = 0
try:
    while made < 128:
        with open(f"/dev/shm/f{made}", "wb") as f:
            f.write(b"x" * (1 << 20))
        made += 1
except OSError:
    pass
answer = f"made {made}"
"""), limits)
    assert int(outcome.answer.split()[1]) <= 8, outcome


def test_children_share_the_candidates_memory_limit(protections):
    if not protections["cgroup_memory"]:
        pytest.skip("no memory cgroup can be made here")
    limits = Limits(memory_mb=768, pids=32, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness("""
import subprocess
code = "import os, time\\nb = b'x' * (300 << 20)\\nopen('held%d' % os.getpid(), 'w').close()\\ntime.sleep(60)"
kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(4)]
held = lambda k: os.path.exists("held%d" % k.pid)
while not all(k.poll() is not None or held(k) for k in kids):
    time.sleep(0.1)
holding = sum(k.poll() is None and held(k) for k in kids)
for k in kids:
    k.kill()
answer = f"holding {holding}"
"""), limits)
    # 4 x 300 MiB fit each process's own limits, not the candidate's 768 MiB together.
    assert outcome.answer is not None and int(outcome.answer.split()[1]) <= 2, outcome


def test_python_calls_of_one_candidate_wait_for_a_slot():
    limits = Limits(memory_mb=1536, pids=64, python_concurrency=1, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness("""
import concurrent.futures, contextvars
code = "import time\\nt = time.time()\\ntime.sleep(0.3)\\nprint(t, time.time())"
with concurrent.futures.ThreadPoolExecutor(3) as pool:
    futs = [pool.submit(contextvars.copy_context().run, tools.python, code, 30) for _ in range(3)]
    answer = "|".join(f.result().stdout.strip() for f in futs)
"""), limits, Toolbox(python_limits=limits))
    spans = sorted(tuple(map(float, part.split())) for part in outcome.answer.split("|"))
    assert len(spans) == 3
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans


def test_tools_python_counts_against_its_candidates_memory(protections):
    if not protections["cgroup_memory"]:
        pytest.skip("no memory cgroup can be made here")
    # The call's own limit (2 GiB) allows the allocation; the candidate's (768 MiB) does not.
    limits = Limits(memory_mb=768, python_memory_mb=2048, pids=64, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness("""
out = tools.python("b = b'x' * (1200 << 20)\\nprint('held')", 30)
answer = (out.stdout or "") + "|" + str(out.error)
"""), limits, Toolbox(python_limits=limits))
    stdout, error = outcome.answer.split("|", 1)
    assert "held" not in stdout and error != "None", outcome


def test_fallbacks_are_named_where_no_cgroup_can_be_made():
    from harness_learning.harnesses.sandbox import sandbox_fallbacks

    missing = sandbox_fallbacks(LocalBackend(use_cgroup=False))
    assert {"cgroup_memory", "cgroup_pids"} <= set(missing)
    assert "per process" in missing["cgroup_memory"]


# -- the bridge -----------------------------------------------------------------------------

def test_oversized_tool_arguments_are_refused_before_the_call():
    toolbox = ScriptedToolbox()
    limits = Limits(memory_mb=1536, pids=32, tool_arg_bytes=64 * 1024, problem_timeout_s=30.0)
    outcome, _ = run_alone(node_harness("""
try:
    tools.llm("x" * (1 << 20))
    answer = "called"
except Exception as exc:
    answer = f"{type(exc).__name__}: {exc}"
"""), limits, toolbox)
    assert "tool_arg_bytes" in outcome.answer and not toolbox.seen, outcome


def test_the_parent_refuses_a_raw_oversized_call():
    toolbox = ScriptedToolbox()
    limits = Limits(memory_mb=1536, pids=32, tool_arg_bytes=64 * 1024, problem_timeout_s=30.0)
    outcome, _ = run_alone(node_harness(FIND_BRIDGE + """
msg = {"op": "call", "id": 10 ** 9, "run": rid, "tool": "llm", "args": {"messages": "y" * 200000}}
bridge_write((json.dumps(msg) + "\\n").encode())
time.sleep(1.0)
answer = "sent"
"""), limits, toolbox)
    assert not toolbox.seen
    assert any("tool_arg_bytes" in (c.error or "") for c in outcome.calls), outcome


def test_stored_traces_keep_the_head_of_long_arguments():
    limits = Limits(memory_mb=1536, pids=32, trace_arg_chars=1000, problem_timeout_s=30.0)
    outcome, _ = run_alone(node_harness("""
answer = tools.llm("z" * 50000)
"""), limits, ScriptedToolbox(reply=lambda args: "r" * 20000))
    call = outcome.calls[0]
    assert len(call.args["messages"]) < 1100 and len(call.result) < 1100
    assert call.meta["truncated"] == {"args_chars": 49000, "result_chars": 19000}


@pytest.mark.parametrize("line", [
    '"{\\"op\\": \\"call\\", \\"id\\": 1, \\"run\\": \\"x\\", \\"args\\": " + "[" * 100000 + "]" * 100000 + "}\\n"',
    'b"\\xff\\xfe not json \\x80\\n"',
    '"[1, 2, 3]\\n"',
], ids=["nested_200kb", "not_utf8", "json_not_a_message"])
def test_any_bad_line_kills_the_worker_at_once(line):
    source = node_harness(FIND_BRIDGE + f"""
data = {line}
bridge_write(data if isinstance(data, bytes) else data.encode())
time.sleep(60)
answer = "still running"
""")
    outcome, alive = run_alone(source, TEST_LIMITS, timeout=60.0)
    assert outcome.error_kind == "harness" and "protocol" in outcome.error, outcome
    assert not alive and outcome.latency_s < 60.0


# -- infrastructure is the parent's call ----------------------------------------------------

@pytest.mark.parametrize("body", [
    "from harness_learning.harnesses.sandbox.protocol import InfraAbort\nraise InfraAbort('down')",
    "from harness_learning.harnesses.sandbox.protocol import BudgetAbort\nraise BudgetAbort('spent')",
    FIND_BRIDGE + "bridge_write((json.dumps({'op': 'result', 'run': rid, 'error': 'down', "
                  "'error_kind': 'infra'}) + '\\n').encode())\ntime.sleep(2)\nanswer = 'x'",
], ids=["infra_abort", "budget_abort", "forged_result"])
def test_a_worker_claiming_infrastructure_failure_is_at_fault(sandbox, body):
    outcome = sandbox.run_one(node_harness(body))
    assert outcome.error_kind == "harness" and "never saw" in outcome.error, outcome


def test_a_real_infrastructure_failure_stays_unscored(sandbox):
    class InfraError(Exception):
        kind = "infra"

    outcome = sandbox.run_one(node_harness("answer = tools.llm('hi')"),
                              toolbox=ScriptedToolbox(raises=InfraError("endpoint down")))
    assert outcome.error_kind == "infra", outcome


# -- no gold inside -------------------------------------------------------------------------

def test_no_dataset_generator_or_evals_code_is_importable(need_bwrap):
    limits = Limits(memory_mb=1536, pids=32, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness("""
import glob, importlib
sys.path += glob.glob(sys.prefix + "/lib/python3*/site-packages")
sys.path += glob.glob(sys.base_prefix + "/lib/python3*/site-packages")
found = []
for name in ("reasoning_gym", "numpy", "harness_learning.evals", "litellm"):
    try:
        importlib.import_module(name)
        found.append(name)
    except ImportError:
        pass
inner = tools.python("import reasoning_gym", 20)
answer = ",".join(found) + "|" + str(inner.error)
"""), limits, Toolbox(python_limits=limits))
    imported, inner = outcome.answer.split("|")
    assert imported == "" and "No module named 'reasoning_gym'" in inner, outcome


# -- kernel surface -------------------------------------------------------------------------

def test_kernel_interfaces_and_nested_namespaces_are_refused(sandbox, need_bwrap, protections):
    if not protections["seccomp"]:
        pytest.skip("bubblewrap cannot install a seccomp filter here")
    outcome = sandbox.run_one(node_harness("""
import ctypes, platform, subprocess
from harness_learning.harnesses.sandbox.seccomp import AARCH64, X86_64
table = X86_64 if platform.machine() == "x86_64" else AARCH64
libc = ctypes.CDLL(None, use_errno=True)
reached = [n for n in ("io_uring_setup", "perf_event_open", "keyctl", "bpf", "ptrace", "mount",
                       "unshare", "setns") if libc.syscall(table[n], 0, 0, 0, 0, 0) != -1
           or ctypes.get_errno() != 1]
if subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode == 0:
    reached.append("unshare -U")
answer = "refused" if not reached else ",".join(reached)
"""))
    assert outcome.answer == "refused", outcome
