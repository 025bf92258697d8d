"""Pre-started workers hand out warm: imports are done before a candidate arrives."""

from __future__ import annotations

import time

from harness_learning.harnesses.sandbox import sandbox_info
from harness_learning.harnesses.seeds import seed_source

from .conftest import ScriptedToolbox


def test_warm_worker_is_ready_fast_and_replaced(sandbox):
    async def go():
        pool = sandbox.pool
        first = await pool.acquire(ScriptedToolbox())  # may still be starting
        await first.close()
        for task in list(pool._starting):  # let the replacements finish their imports
            await task
        t0 = time.perf_counter()
        warm = await pool.acquire(ScriptedToolbox())
        acquired = time.perf_counter() - t0
        try:
            await warm.load(seed_source("reasoning_direct"))
            outcome = await warm.run("p", {"question": "q"})
        finally:
            await warm.close()
        return acquired, outcome, len(pool._starting)

    acquired, outcome, starting = sandbox.run(go())
    assert acquired < 0.15, f"a warm worker took {acquired * 1000:.0f} ms to hand out"
    assert outcome.answer == "4" and starting == sandbox.pool.size


def test_sandbox_info_names_its_protections():
    info = sandbox_info()
    assert info["rlimits"] is True and info["scrubbed_env"] is True
    assert info["backend"] in ("local", "docker")
    assert set(info) >= {"bwrap", "cgroup_pids", "network_isolated", "docker"}


def test_closing_kills_the_workers_still_importing_and_reaps_them():
    """A run's end closes its pool while the replacements `acquire` started still import:
    they are killed, not waited for, and no process of theirs is left."""
    import asyncio

    from harness_learning.harnesses.sandbox.pool import WorkerPool

    async def go():
        pool = WorkerPool(size=2)
        pool.fill()
        while len(pool._spawning) < 2 or not all(
                w.process is not None and w._ready is not None for w in pool._spawning.values()):
            await asyncio.sleep(0.01)  # spawned, imports under way (a second or more)
        workers = list(pool._spawning.values())
        await pool.close()
        return workers

    workers = asyncio.run(go())
    assert all(w.process.proc.returncode is not None for w in workers)
    assert [w._death for w in workers] == [
        ("infra", "the pool closed before the worker was ready")] * 2
