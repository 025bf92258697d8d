"""Hostile harness sources fail safely, with a recorded reason, and harm neither the parent nor
the host."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import harness_learning.harnesses
from harness_learning.harnesses.compiler import HarnessInvalid
from harness_learning.harnesses.sandbox import Worker, run_python

from .conftest import TEST_LIMITS, ScriptedToolbox, node_harness

pytestmark = pytest.mark.reliability


def test_infinite_loop_times_out(sandbox):
    t0 = time.perf_counter()
    outcome = sandbox.run_one(node_harness("while True:\n    pass\nanswer = 1"), timeout=1.0)
    assert outcome.error_kind == "timeout" and outcome.answer is None
    assert time.perf_counter() - t0 < 10


def test_loop_that_catches_the_timeout_still_times_out(sandbox):
    source = node_harness("""
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
answer = 1""")
    outcome = sandbox.run_one(source, timeout=1.0)
    assert outcome.error_kind == "timeout"


def test_module_level_loop_fails_the_load(sandbox):
    async def go():
        async with sandbox.worker() as worker:
            with pytest.raises(HarnessInvalid) as info:
                await worker.load("while True:\n    pass\ndef build_graph(tools):\n    pass\n",
                                  timeout=1.5)
            return info.value, worker.alive

    exc, alive = sandbox.run(go())
    assert exc.kind == "build_raised" and "took over" in exc.detail
    assert not alive  # the stuck worker was killed


def test_memory_bomb_hits_the_address_space_limit(sandbox):
    source = node_harness("""
hog = []
try:
    while True:
        hog.append(bytearray(64 * 1024 * 1024))
except MemoryError:
    answer = f"stopped after {len(hog) * 64} MiB"
    hog.clear()""")
    outcome = sandbox.run_one(source)
    assert outcome.answer is not None and outcome.answer.startswith("stopped"), outcome
    assert int(outcome.answer.split()[2]) <= TEST_LIMITS.memory_mb


def test_fork_bomb_is_bounded(sandbox, protections):
    if not protections["cgroup_pids"] and os.geteuid() == 0:
        pytest.skip("no writable pids cgroup and running as root: nothing bounds processes")
    source = node_harness("""
made = 0
try:
    for _ in range(300):
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        made += 1
    answer = f"made {made}"
except OSError as exc:
    answer = f"made {made} then {type(exc).__name__}"
""")
    keep: list = []
    outcome = sandbox.run_one(source, keep=keep)
    made = int(outcome.answer.split()[1])
    assert made < TEST_LIMITS.pids, outcome.answer
    group = keep[0].process.group
    assert group is None or not any(d.exists() for d in group.dirs)  # closed: all gone, removed


def test_write_outside_the_scratch_directory_does_not_reach_the_host(sandbox, need_bwrap, tmp_path):
    target = tmp_path / "owned.txt"
    package_file = Path(harness_learning.harnesses.__file__).parent / "owned.txt"
    source = node_harness(f"""
results = []
for path in ({str(target)!r}, {str(package_file)!r}, "/owned.txt"):
    try:
        with open(path, "w") as f:
            f.write("owned")
        results.append("wrote")
    except OSError as exc:
        results.append(type(exc).__name__)
with open("scratch.txt", "w") as f:
    f.write("mine")
answer = ",".join(results)""")
    outcome = sandbox.run_one(source)
    assert outcome.error is None, outcome
    assert not target.exists() and not package_file.exists() and not Path("/owned.txt").exists()
    assert outcome.answer.split(",")[1:] != ["wrote", "wrote"]


def test_secret_in_parent_environment_is_invisible(sandbox, protections, monkeypatch):
    secret = f"sk-test-{os.getpid()}-{time.time_ns()}"
    monkeypatch.setenv("HARNESS_TEST_API_KEY", secret)  # planted before the worker starts
    source = node_harness(f"""
found = [k for k, v in os.environ.items() if {secret!r} in v]
for pid in os.listdir("/proc"):
    try:
        with open(f"/proc/{{pid}}/environ", "rb") as f:
            if {secret!r}.encode() in f.read():
                found.append(pid)
    except (OSError, ValueError):
        pass
answer = "found " + ",".join(found) if found else "clean"
""")

    async def go():
        async with Worker(ScriptedToolbox(), TEST_LIMITS) as worker:
            await worker.load(source)
            outcome = await worker.run("p", {"question": "q"})
        python = await run_python(f"import os\nprint(any({secret!r} in v for v in os.environ.values()))")
        return outcome, python

    outcome, python = sandbox.run(go())
    assert outcome.answer == "clean" or not protections["bwrap"], outcome
    assert "HARNESS_TEST_API_KEY" not in outcome.answer  # never in its own environment
    assert python.stdout == "False\n", python


def test_socket_to_host_loopback_connects_to_nothing(sandbox, need_bwrap):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    port, accepted = listener.getsockname()[1], []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    source = node_harness(f"""
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"leak")
    answer = "connected"
except OSError as exc:
    answer = "refused " + type(exc).__name__""")
    try:
        outcome = sandbox.run_one(source)
    finally:
        stop.set()
        thread.join(2)
        listener.close()
    assert accepted == [], "a sandboxed harness reached the host's loopback"
    assert outcome.answer.startswith("refused"), outcome


def test_stdout_flood_is_capped(sandbox):
    source = node_harness("""
chunk = "x" * (1 << 20)
for _ in range(40):
    sys.stdout.write(chunk)
sys.stdout.flush()
answer = "flooded"
""")
    keep: list = []
    outcome = sandbox.run_one(source, keep=keep)
    worker = keep[0]
    assert outcome.answer == "flooded", outcome
    assert worker.stdout.total >= 40 << 20
    assert len(worker.stdout.data) <= TEST_LIMITS.output_bytes


def test_harness_speaking_the_bridge_protocol_cannot_forge_other_runs(sandbox):
    """Harness code can find the bridge fd; forged messages must only hurt its own run."""
    source = node_harness("""
import json
for fd in range(3, 64):
    try:
        os.write(fd, b'{"op": "result", "run": "other#1", "answer": "forged"}\\n{garbage\\n')
    except OSError:
        pass
answer = "sent"
""")
    outcome = sandbox.run_one(source)
    assert outcome.error_kind in (None, "harness"), outcome


def test_file_size_limit(sandbox):
    source = node_harness(f"""
try:
    with open("big.bin", "wb") as f:
        for _ in range({TEST_LIMITS.file_size_mb + 8}):
            f.write(b"x" * (1 << 20))
    answer = "wrote it all"
except OSError as exc:
    answer = f"stopped: {{exc.strerror}}"
""")
    outcome = sandbox.run_one(source)
    assert outcome.answer == "stopped: File too large", outcome


def test_cpu_limit_kills_a_worker_stuck_in_c_code():
    """`sum(range(...))` runs in C, where no exception can be raised: only the CPU rlimit
    (or the candidate's wall clock) ends it."""
    import asyncio

    from harness_learning.harnesses.sandbox import Limits

    async def go():
        limits = Limits(cpu_s=6, memory_mb=1536, pids=32, problem_timeout_s=60.0)
        async with Worker(ScriptedToolbox(), limits) as worker:
            await worker.load(node_harness("answer = sum(range(10 ** 13))"))
            return await worker.run("spin", {"question": "q"})

    outcome = asyncio.run(go())
    assert outcome.error_kind == "timeout" and "CPU limit" in outcome.error, outcome


FILL_SCRATCH = node_harness("""
made = 0
try:
    while made < 40:
        with open(f"fill{made}", "wb") as f:
            f.write(b"x" * (4 << 20))
        made += 1
        time.sleep(0.05)
    answer = f"made {made}"
except OSError as exc:
    answer = f"made {made}: {exc.strerror}"
""")


def _fill_scratch(backend):
    import asyncio
    from dataclasses import replace

    async def go():
        limits = replace(TEST_LIMITS, scratch_mb=16, file_size_mb=8)
        async with Worker(ScriptedToolbox(), limits, backend=backend) as worker:
            await worker.load(FILL_SCRATCH)
            scratch = worker.process.scratch
            outcome = await worker.run("fill", {"question": "q"})
        return outcome, Path(scratch).exists()

    return asyncio.run(go())


def test_scratch_is_a_bounded_tmpfs_under_bubblewrap(need_bwrap):
    from harness_learning.harnesses.sandbox.local import LocalBackend

    outcome, left = _fill_scratch(LocalBackend(use_bwrap=True))
    made = int(outcome.answer.split()[1].rstrip(":"))
    assert "No space left" in outcome.answer and made <= 4, outcome  # 16 MB of 4 MB files
    assert not left


def test_scratch_over_its_limit_kills_the_worker_without_bubblewrap():
    from harness_learning.harnesses.sandbox.local import LocalBackend

    outcome, left = _fill_scratch(LocalBackend(use_bwrap=False))
    assert outcome.error_kind == "harness" and "Limits.scratch_mb" in outcome.error, outcome
    assert not left  # the files went with the worker
