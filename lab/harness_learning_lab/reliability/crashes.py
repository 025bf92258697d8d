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

from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.llm.simserver import ARITHMETIC_RULE
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.sqlite_wal import connect_read_only
from harness_learning_lab.reliability.common import (
    CHECKPOINTS_FILE,
    LOG_FILE,
    decisions,
    evaluation_keys,
    integrity,
    revision_rule,
    sandbox_leftovers,
    sim_spec,
)

CLI = str(Path(sys.executable).parent / "harness-learn")
IDLE_WORKER_THREADS = 3
"""Threads of a sandbox worker with no problem running (main, bridge reader, watchdog)."""


def adapt_argv(run_dir: Path, url: str, rounds: int) -> list[str]:
    spec = sim_spec(url, max_retries=3, timeout_s=10, backoff_s=0.05)
    return [CLI, "adapt", "--task", "rg:basic_arithmetic", "--run-dir", str(run_dir),
            "--solver", spec, "--proposer", spec, "--rounds", str(rounds), "--candidates", "1",
            "--policy", "best_valid", "--edit-format", "search_replace", "--feedback", "2",
            "--selection", "2", "--dev", "4", "--test", "2", "--concurrency", "2", "--seed", "3"]


def _start(run_dir: Path, url: str, log_path: Path, rounds: int) -> subprocess.Popen:
    argv = ([CLI, "resume", str(run_dir)] if RunDir(run_dir).is_run()
            else adapt_argv(run_dir, url, rounds))
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


def _await_progress(proc: subprocess.Popen, run_dir: Path, target: int,
                    timeout: float = 300) -> bool:
    """Wait until the run's log holds `target` evaluations; False if the process ended first."""
    deadline = time.time() + timeout
    while len(evaluation_keys(run_dir)) < target and time.time() < deadline:
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return proc.poll() is None


def run_crashes(root: Path, kills: int = 5, seed: int = 0, rounds: int = 4,
                log: Any = None) -> dict[str, Any]:
    """An uninterrupted run, then the same run killed `kills` times and resumed after each
    kill; returns the figures. Kill moments are seeded and spread over the work left: each
    lands a random fraction of a second after the log gains a random number of evaluations
    (at most what is left over the kills still to make, so a kill finds work to interrupt),
    i.e. during the next evaluation, a proposal, a checkpoint or a log write. Once fewer
    evaluations are left than kills to make, the kill lands while the resumed process starts
    (opening its run, reading its checkpoints); a process that finishes first is started
    again, so exactly `kills` kills are made (`MAX_TRIES_PER_KILL` tries each at most)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    server = SimServer(latency_s=0.05, rules=[revision_rule(), ARITHMETIC_RULE])
    with server as url:
        clean_dir = root / "uninterrupted"
        clean_dir.mkdir()
        rc = _finish(_start(clean_dir, url, root / "uninterrupted.log", rounds), 600)
        total = len(evaluation_keys(clean_dir))
        if rc != 0:
            raise RuntimeError(f"the uninterrupted run failed (exit {rc}); see {root / 'uninterrupted.log'}")
        run_dir = root / "killed"
        run_dir.mkdir()
        kept = _kill_repeatedly(run_dir, url, root / "killed.log", rounds, kills, total, rng, log)
        rc = _finish(_start(run_dir, url, root / "killed.log", rounds), 600)
    seen = kept["seen"]
    after = evaluation_keys(run_dir)
    same = rc == 0 and decisions(run_dir) == decisions(clean_dir)
    return {"kills": kept["delivered"], "kills_asked": kills, "kill_moments": kept["moments"],
            "final_exit": rc, "resumes_matched": int(same), "resumes_tried": 1,
            "records_lost": len(seen - after), "evaluations_before_last_kill": len(seen),
            "unsound_after_kill": kept["unsound"],
            "integrity": {n: integrity(run_dir / n) for n in (LOG_FILE, CHECKPOINTS_FILE)},
            "current_sha": (decisions(run_dir) or [(0, "", "", "")])[-1][2][:12],
            "uninterrupted_evaluations": total}


MAX_TRIES_PER_KILL = 3
"""Starts of the run per kill before giving up (a process that finished before its kill)."""


def _next_kill(rng: random.Random, left: int, kills_left: int) -> tuple[int, float]:
    """(evaluations to wait for, seconds to wait after them) for the next kill: a share of
    the `left` evaluations over the `kills_left` kills still to make (and the run's end), or
    none (a kill while the process starts) once fewer are left than kills."""
    step = left // (kills_left + 1)
    if step < 1:
        return 0, rng.uniform(0.0, 0.3)
    return rng.randint(1, step), rng.uniform(0.0, 0.5 if step > 1 else 0.1)


def _kill_repeatedly(run_dir: Path, url: str, log_path: Path, rounds: int, kills: int,
                     total: int, rng: random.Random, log: Any) -> dict[str, Any]:
    """Start (or resume) the run and SIGKILL it, `kills` times; check both SQLite files after
    each kill. Returns what was delivered, when, and the evaluations stored by then."""
    seen: set[tuple] = set()
    delivered, unsound, moments = 0, [], []
    for _ in range(kills * MAX_TRIES_PER_KILL):
        if delivered == kills:
            break
        n, extra = _next_kill(rng, total - len(seen), kills - delivered)
        proc = _start(run_dir, url, log_path, rounds)
        if not _await_progress(proc, run_dir, len(seen) + n):
            seen |= evaluation_keys(run_dir)
            continue  # it finished first: the next try resumes it and kills it sooner
        time.sleep(extra)
        if proc.poll() is not None:
            seen |= evaluation_keys(run_dir)
            continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        delivered += 1
        moments.append(f"+{n} evaluations + {extra:.2f} s")
        for name in (LOG_FILE, CHECKPOINTS_FILE):
            verdict = integrity(run_dir / name)
            if verdict not in ("ok", "absent"):
                unsound.append(f"kill {delivered}: {name}: {verdict}")
        seen |= evaluation_keys(run_dir)
        if log:
            log(f"kill {delivered} after {moments[-1]}: {len(seen)} evaluations stored")
    return {"delivered": delivered, "moments": moments, "unsound": unsound, "seen": seen}


def kill_workers_midrun(root: Path, kills: int = 2, log: Any = None) -> dict[str, Any]:
    """An in-process adaptation run whose sandbox workers are SIGKILLed while problems run:
    the run must complete, the killed problems must be recorded with the reason, and the log
    must stay sound. A kill between a worker's start and its source's arrival is the
    infrastructure's (no harness code ran there): if both tries of one evaluation meet one,
    the run stops with `InfraStop`, and then it must complete on resume, as a user's would."""
    from harness_learning.graphs.adapter.nodes import InfraStop
    from harness_learning.graphs.adapter.run import run_adaptation
    from harness_learning_lab.reliability.faults import _context, fault_config

    root = Path(root)
    server = SimServer(latency_s=0.4, rules=[revision_rule(), ARITHMETIC_RULE])
    with server as url:
        config = fault_config(root / "worker-kills", url)
        killed: list[int] = []
        stop = threading.Event()
        # Workers other code in this process keeps warm are not this run's: never kill them.
        others = set(sandbox_leftovers())
        thread = threading.Thread(target=_kill_workers, args=(server, kills, killed, stop, others),
                                  daemon=True)
        thread.start()
        stopped = None
        try:
            final = asyncio.run(run_adaptation(config, context=_context(config)))
        except InfraStop as exc:
            stopped = str(exc)
        finally:
            stop.set()
            thread.join(5)
        if stopped is not None:
            final = asyncio.run(run_adaptation(config, resume=True, context=_context(config)))
    conn = connect_read_only(config.path / LOG_FILE)
    charged = conn.execute("SELECT count(*) FROM evaluations WHERE error LIKE '%worker%killed%' "
                           "OR error LIKE '%worker exited%'").fetchone()[0]
    conn.close()
    if log:
        log(f"worker kills: {len(killed)}, problems charged: {charged}")
    return {"worker_kills": len(killed), "problems_charged": charged, "stopped": stopped,
            "completed": str(final.get("stop_reason", "")).startswith("finished"),
            "integrity": integrity(config.path / LOG_FILE)}


def _kill_workers(server: SimServer, kills: int, killed: list[int], stop: threading.Event,
                  others: set[int] = frozenset()) -> None:
    """While a Solver call is in flight, SIGKILL the sandboxed Python of the worker running the
    most problems, `kills` times."""
    import psutil

    me = psutil.Process()
    while len(killed) < kills and not stop.is_set():
        time.sleep(0.1)  # a problem is busy for about one 0.4 s Solver call
        if server.stats.in_flight == 0:
            continue
        workers = []
        for child in me.children(recursive=True):
            try:
                cmd = child.cmdline()
                if child.pid not in others and cmd and cmd[0] == sys.executable \
                        and "harness_learning.harnesses.sandbox.worker" in cmd:
                    workers.append((child.create_time(), child))
            except psutil.Error:
                continue
        victim = _busiest(workers)
        if victim is None:  # in flight is a Proposer call: no worker is mid-problem
            continue
        try:
            victim.send_signal(signal.SIGKILL)
            killed.append(victim.pid)
        except psutil.Error:
            continue


def _busiest(workers: list) -> Any:
    """The worker running the most problems, told from outside by its threads (a worker runs
    each problem in a thread of its own; an idle one has `IDLE_WORKER_THREADS`);
    None when no worker has a problem running."""
    import psutil

    counts = []
    for _, proc in workers:
        try:
            counts.append((proc.num_threads(), proc))
        except psutil.Error:
            continue
    busy = [c for c in counts if c[0] > IDLE_WORKER_THREADS]
    return max(busy, key=lambda c: c[0])[1] if busy else None
