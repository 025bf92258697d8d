"""Crashes: SIGKILL of a `harness-learn adapt` process at seeded random moments, resumed each
time, must end where an uninterrupted run ends (same current version, same decisions), with
both SQLite files sound after every kill and no stored evaluation lost. And SIGKILL of a
sandbox worker mid-problem must cost only that worker's unfinished problems.

A worker killed from outside is charged to the candidate (its problems score 0, with the
reason): a harness can SIGKILL its own worker, so counting such deaths as infrastructure
errors would let one hostile candidate stop every run with `InfraStop`."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from graphs.reliability.common import (
    CHECKPOINTS_FILE,
    LOG_FILE,
    decisions,
    evaluation_keys,
    integrity,
    revision_rule,
    sim_spec,
)
from harnesses.models import SimServer
from harnesses.models.simserver import ARITHMETIC_RULE

CLI = str(Path(sys.executable).parent / "harness-learn")


def adapt_argv(run_dir: Path, url: str) -> list[str]:
    spec = sim_spec(url, max_retries=3, timeout_s=10, backoff_s=0.05)
    return [CLI, "adapt", "--task", "rg:basic_arithmetic", "--run-dir", str(run_dir),
            "--solver", spec, "--proposer", spec, "--rounds", "3", "--candidates", "1",
            "--policy", "best_valid", "--edit-format", "search_replace", "--feedback", "2",
            "--selection", "2", "--dev", "4", "--test", "2", "--concurrency", "2", "--seed", "3"]


def _start(run_dir: Path, url: str, log_path: Path) -> subprocess.Popen:
    argv = ([CLI, "resume", str(run_dir)] if (run_dir / "config.json").exists()
            else adapt_argv(run_dir, url))
    out = log_path.open("ab")
    return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=str(run_dir.parent),
                            env={**os.environ, "COLUMNS": "120"})


def _finish(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -9


def _await_work(proc: subprocess.Popen, server: SimServer, timeout: float = 300) -> bool:
    """Wait until the process calls the model (its imports are done); False if it ended."""
    start, deadline = server.stats.requests, time.time() + timeout
    while server.stats.requests == start and time.time() < deadline:
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return proc.poll() is None


def run_crashes(root: Path, kills: int = 5, seed: int = 0, log: Any = None) -> dict[str, Any]:
    """An uninterrupted run, then the same run killed `kills` times and resumed after each
    kill; returns the figures. Each kill lands at a seeded random delay after the process
    starts working (its first model call): up to 0.9 of the uninterrupted work's duration
    over `kills + 1`, so that every kill finds work left to interrupt."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    server = SimServer(latency_s=0.05, rules=[revision_rule(), ARITHMETIC_RULE])
    with server as url:
        clean_dir = root / "uninterrupted"
        clean_dir.mkdir()
        proc = _start(clean_dir, url, root / "uninterrupted.log")
        _await_work(proc, server)
        t0 = time.perf_counter()
        rc = _finish(proc, 600)
        work_s = time.perf_counter() - t0
        if rc != 0:
            raise RuntimeError(f"the uninterrupted run failed (exit {rc}); see {root / 'uninterrupted.log'}")
        run_dir = root / "killed"
        run_dir.mkdir()
        seen: set[tuple] = set()
        delivered, unsound, delays = 0, [], []
        for _ in range(kills):
            delay = rng.uniform(0.05, 0.9) * work_s / (kills + 1)
            proc = _start(run_dir, url, root / "killed.log")
            if not _await_work(proc, server):
                break  # it finished before working: nothing left to interrupt
            try:
                proc.wait(delay)
                break  # it finished before the kill
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            delivered += 1
            delays.append(round(delay, 2))
            for name in (LOG_FILE, CHECKPOINTS_FILE):
                verdict = integrity(run_dir / name)
                if verdict not in ("ok", "absent"):
                    unsound.append(f"kill {delivered}: {name}: {verdict}")
            seen |= evaluation_keys(run_dir)
            if log:
                log(f"kill {delivered} {delay:.1f} s into the work: {len(seen)} evaluations stored")
        rc = _finish(_start(run_dir, url, root / "killed.log"), 600)
    after = evaluation_keys(run_dir)
    same = rc == 0 and decisions(run_dir) == decisions(clean_dir)
    return {"kills": delivered, "kill_delays_s": delays, "final_exit": rc,
            "resumes_matched": int(same), "resumes_tried": 1,
            "records_lost": len(seen - after), "evaluations_before_last_kill": len(seen),
            "unsound_after_kill": unsound,
            "integrity": {n: integrity(run_dir / n) for n in (LOG_FILE, CHECKPOINTS_FILE)},
            "current_sha": (decisions(run_dir) or [(0, "", "", "")])[-1][2][:12],
            "work_s": round(work_s, 1)}


def kill_workers_midrun(root: Path, kills: int = 2, log: Any = None) -> dict[str, Any]:
    """An in-process adaptation run whose sandbox workers are SIGKILLed while problems run:
    the run must complete, the killed problems must be recorded with the reason, and the log
    must stay sound."""
    from graphs.adapter.run import run_adaptation
    from graphs.reliability.faults import _context, fault_config

    root = Path(root)
    server = SimServer(latency_s=0.4, rules=[revision_rule(), ARITHMETIC_RULE])
    with server as url:
        config = fault_config(root / "worker-kills", url)
        killed: list[int] = []
        stop = threading.Event()
        thread = threading.Thread(target=_kill_workers, args=(server, kills, killed, stop), daemon=True)
        thread.start()
        try:
            final = asyncio.run(run_adaptation(config, context=_context(config)))
        finally:
            stop.set()
            thread.join(5)
    import sqlite3

    conn = sqlite3.connect(f"file:{config.path / LOG_FILE}?mode=ro", uri=True)
    charged = conn.execute("SELECT count(*) FROM evaluations WHERE error LIKE '%worker%killed%' "
                           "OR error LIKE '%worker exited%'").fetchone()[0]
    conn.close()
    if log:
        log(f"worker kills: {len(killed)}, problems charged: {charged}")
    return {"worker_kills": len(killed), "problems_charged": charged,
            "completed": str(final.get("stop_reason", "")).startswith("finished"),
            "integrity": integrity(config.path / LOG_FILE)}


def _kill_workers(server: SimServer, kills: int, killed: list[int], stop: threading.Event) -> None:
    """While a Solver call is in flight (a problem is mid-run), SIGKILL the sandboxed Python of
    the oldest worker (pooled spares are younger than the one in use), `kills` times."""
    import psutil

    me = psutil.Process()
    while len(killed) < kills and not stop.is_set():
        time.sleep(0.5)
        if server.stats.in_flight == 0:
            continue
        workers = []
        for child in me.children(recursive=True):
            try:
                cmd = child.cmdline()
                if cmd and cmd[0] == sys.executable and "harnesses.sandbox.worker" in cmd:
                    workers.append((child.create_time(), child))
            except psutil.Error:
                continue
        if workers:
            victim = min(workers, key=lambda w: w[0])[1]
            try:
                victim.send_signal(signal.SIGKILL)
                killed.append(victim.pid)
            except psutil.Error:
                continue
