"""`tools.python`: Solver-written code runs in its own sandbox process with limits."""

from __future__ import annotations

import asyncio
import time

from harness_learning.harnesses.sandbox import Limits, run_python


def run(code: str, timeout: float = 10.0, limits: Limits | None = None):
    return asyncio.run(run_python(code, timeout, limits))


def test_stdout_and_errors():
    ok = run("print('a'); print(2 ** 10)")
    assert ok.stdout == "a\n1024\n" and ok.error is None
    bad = run("x = 1\nraise ValueError('nope')")
    assert "ValueError: nope" in bad.error and 'File "<solver>", line 2' in bad.error


def test_wall_clock_limit_kills_a_sleeping_program():
    t0 = time.perf_counter()
    result = run("import time\nprint('start', flush=True)\ntime.sleep(60)", timeout=1.0)
    assert "timed out" in result.error and result.stdout == "start\n"
    assert time.perf_counter() - t0 < 8


def test_memory_limit():
    result = run("x = bytearray(3 * 1024 ** 3)", limits=Limits(python_memory_mb=256))
    assert "MemoryError" in result.error


def test_output_is_capped():
    result = run("print('z' * 10_000_000)", limits=Limits(output_bytes=1000))
    assert len(result.stdout) < 1100 and "earlier bytes dropped" in result.stdout
