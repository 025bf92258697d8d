"""What the reliability scenarios share: a tiny arithmetic task the simulated server answers
correctly, model specs for it, and outside checks of a run directory."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any

from harness_learning.evals.problem import Problem
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.sqlite_wal import connect_read_only

LOG_FILE = RunDir.LOG
CHECKPOINTS_FILE = RunDir.CHECKPOINTS


class SumTask:
    """'What is A + B?' problems. The simulated server's arithmetic rule answers them right, so
    with the seed harness every scored problem scores 1: a stored 0 means an infrastructure
    error was scored as a wrong answer."""

    name, track, seed = "sums", "reasoning", "reasoning_direct"
    description = "Questions 'What is A + B?'. Answer with the number only. Exact match."

    def __init__(self, n_dev: int = 6, n_test: int = 2) -> None:
        self.n_dev, self.n_test = n_dev, n_test

    def dev(self) -> list[Problem]:
        return [Problem(f"d{i}", {"question": f"What is {i} + {i + 3}?"}, str(2 * i + 3))
                for i in range(1, self.n_dev + 1)]

    def test(self) -> list[Problem]:
        return [Problem(f"t{i}", {"question": f"What is {i} + 1?"}, str(i + 1))
                for i in range(self.n_test)]

    def score(self, problem: Problem, answer: str) -> float:
        return float(str(answer).strip() == problem.gold)

    def retriever(self):
        return None


def sim_spec(url: str, **options: object) -> str:
    """A `ModelConfig.parse` string for the simulated server at `url`."""
    query = "&".join(f"{k}={v}" for k, v in options.items())
    return f"openai/sim@{url}" + (f"?{query}" if query else "")


def integrity(path: Path) -> str:
    """`PRAGMA integrity_check` of an SQLite file ('ok' when sound; 'absent' when missing)."""
    if not path.exists():
        return "absent"
    conn = connect_read_only(path, timeout=30)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def evaluation_keys(run_dir: Path) -> set[tuple]:
    """(sha, purpose, round, problem_id) of every stored evaluation (empty before the log)."""
    path = Path(run_dir) / LOG_FILE
    if not path.exists():
        return set()
    conn = connect_read_only(path, timeout=30)
    try:
        rows = conn.execute("SELECT sha, purpose, round, problem_id FROM evaluations").fetchall()
    except sqlite3.OperationalError:  # killed before the schema was written
        rows = []
    finally:
        conn.close()
    return {tuple(r) for r in rows}


def stored_scores(run_dir: Path) -> list[tuple]:
    """(problem_id, score, error_kind, error) of every stored evaluation."""
    conn = connect_read_only(Path(run_dir) / LOG_FILE, timeout=30)
    try:
        return conn.execute("SELECT problem_id, score, error_kind, error FROM evaluations").fetchall()
    finally:
        conn.close()


def decisions(run_dir: Path) -> list[tuple]:
    """(round, current_sha, chosen_sha, reason) of every round decision."""
    conn = connect_read_only(Path(run_dir) / LOG_FILE, timeout=30)
    try:
        return conn.execute("SELECT round, current_sha, chosen_sha, reason FROM decisions "
                            "ORDER BY round").fetchall()
    finally:
        conn.close()


def file_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` (to show that nothing was overwritten)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(root).rglob("*")) if p.is_file()}


def sandbox_leftovers() -> list[int]:
    """Pids of sandbox workers still running under this process."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "harness_learning.harnesses.sandbox.worker" in " ".join(child.cmdline()):
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def containers_left(backend: Any, settle_s: float = 10.0) -> int:
    """Containers this process started that still exist (0 off the Docker backend): the engine
    removes each as it exits, so give it `settle_s` to. Blocking."""
    if getattr(backend, "name", "") != "docker":
        return 0
    import os

    from harness_learning.harnesses.sandbox.docker_care import PARENT_LABEL

    deadline = time.monotonic() + settle_s
    while True:
        mine = backend.client.containers.list(
            all=True, filters={"label": f"{PARENT_LABEL}={os.getpid()}"})
        if not mine or time.monotonic() > deadline:
            return len(mine)
        time.sleep(0.5)


REVISION_ANCHOR = "    graph = StateGraph(State)"


def revision_rule() -> tuple[str, object]:
    """A simulated-server rule that answers the Proposer's prompt with a SEARCH/REPLACE edit
    adding one `# revision N` comment, N one more than the program in the prompt holds: every
    round gets a new, valid, deterministic candidate (a pure function of the prompt)."""

    def reply(match) -> str:
        n = match.string.count("# revision") + 1
        return (f"<<<<<<< SEARCH\n{REVISION_ANCHOR}\n=======\n    # revision {n}\n"
                f"{REVISION_ANCHOR}\n>>>>>>> REPLACE\n")

    return r"## Current program", reply
