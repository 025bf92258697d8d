"""A run logged in PostgreSQL, killed (SIGKILL) on one machine, resumes on another that reaches
the same database and ends where an uninterrupted run ends. "Another machine" is a second run
directory holding only what a user would copy: config.json, store.json and the stored inputs;
no Solver cache, no process, no file of the first."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import sim_adapt
from cli_run import HARNESS_LEARN, cli

from harness_learning.harnesses.rundir import open_log_store

CARRIED = ("config.json", "store.json", "inputs")


def outcome(run_dir: Path) -> tuple[list[tuple], dict[str, float | None]]:
    """Each round's decision, and the held-out score of every version tested."""
    with open_log_store(run_dir) as store:
        decided = [(d.round, d.current_sha, d.chosen_sha) for d in store.iter_decisions()]
        tested = {e.sha: e.result.score for e in store.iter_evaluations(purpose="test")}
    return decided, tested


def evaluations(run_dir: Path) -> int:
    """Evaluations in the run's log; 0 until the run has named its PostgreSQL log (opening
    the directory before that would give it a SQLite log of its own)."""
    if not (run_dir / "store.json").exists():
        return 0
    with open_log_store(run_dir) as store:
        return sum(1 for _ in store.iter_evaluations())


def kill_after(args: list[str], run_dir: Path, wanted: int, limit_s: float = 300) -> int:
    """Start `harness-learn *args`, SIGKILL it once its log holds `wanted` evaluations; the
    evaluations logged by then."""
    errors = run_dir.parent / "stderr.txt"
    with errors.open("w") as err:
        proc = subprocess.Popen([HARNESS_LEARN, *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    deadline = time.monotonic() + limit_s
    try:
        while evaluations(run_dir) < wanted:
            assert proc.poll() is None, f"the run ended first: {errors.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "the run logged too little to be killed"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return evaluations(run_dir)


def test_a_killed_postgres_run_resumes_from_another_machine(sim_url, postgres_url, tmp_path):
    clean = tmp_path / "clean"
    done = cli(*sim_adapt.adapt_args(sim_url, str(clean), "--store", postgres_url))
    assert done.returncode == 0, done.stderr[-2000:]

    first, second = tmp_path / "machine1" / "run", tmp_path / "machine2" / "run"
    first.parent.mkdir()
    args = sim_adapt.adapt_args(sim_url, str(first), "--store", postgres_url)
    logged = kill_after(args, first, wanted=6)
    assert logged < evaluations(clean), "killed before the end"
    second.mkdir(parents=True)
    for name in CARRIED:
        source = first / name
        if source.is_dir():
            shutil.copytree(source, second / name)
        elif source.exists():
            shutil.copy(source, second / name)
    resumed = cli("resume", second, "--store", postgres_url)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert not (second / "log.sqlite").exists() and not (second / "checkpoints.sqlite").exists()
    assert outcome(second) == outcome(clean) and outcome(clean)[0], outcome(clean)
    assert evaluations(second) >= logged  # nothing the first machine logged was lost
