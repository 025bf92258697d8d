"""Run the hostile catalogue (`hostile_cases`) through the evaluator and check each case from
the outside. Targets are planted on the host first: a secret file, a directory of files, a run
directory with a real log store, a dataset holding the gold, TCP/UDP/abstract-socket listeners,
a sentinel process. The Solver is the simulated server, reached through the real model layer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness_learning.evals.evaluator import evaluate
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import ProblemResult
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.sandbox import Limits, WorkerPool
from harness_learning.harnesses.sqlite_wal import connect_read_only
from harness_learning.harnesses.text_safety import for_terminal
from harness_learning_lab.reliability.common import (
    containers_left,
    file_hashes,
    integrity,
    sandbox_leftovers,
)
from harness_learning_lab.reliability.hostile_cases import ESCAPES, RESOURCES, Case
from harness_learning_lab.reliability.hostile_edge_cases import (
    EDGE_CHECKS,
    EDGES,
    GULLIBLE_JUDGE,
    judged_task,
    ledger_toolbox,
)
from harness_learning_lab.reliability.hostile_integrity_cases import INTEGRITY, checks
from harness_learning_lab.reliability.hostile_reward_cases import REWARD_HACKING

SECRET_ENV = "HL_RELIABILITY_API_KEY"
CASES: list[Case] = ESCAPES + RESOURCES + REWARD_HACKING + INTEGRITY + EDGES

LIMITS = Limits(cpu_s=30, memory_mb=1536, file_size_mb=8, scratch_mb=32, pids=32,
                problem_timeout_s=5.0, candidate_timeout_s=40.0)

HEAD = """import os, sys, time, socket
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

P = {plant!r}

class State(TypedDict, total=False):
    question: str
    answer: str
"""

TAIL = """
def build_graph(tools):
    def node(state):
        return {"answer": CASES[state["question"]](state, tools)}
    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g
"""


def harness(cases: list[Case], plant: dict[str, Any]) -> str:
    """One harness holding each case's body as a function, dispatched on the question (the
    case's name): the cases of one worker run as that worker's problems."""
    parts = [HEAD.format(plant=plant)]
    for case in cases:
        body = "\n".join("    " + line for line in case.body.splitlines())
        parts.append(f"def case_{case.name}(state, tools):\n{body}\n    return answer\n")
    table = ", ".join(f"{c.name!r}: case_{c.name}" for c in cases)
    parts.append(f"CASES = {{{table}}}\n{TAIL}")
    return "\n".join(parts)


class Listeners:
    """TCP (all addresses), UDP (loopback) and abstract-unix listeners that record contacts."""

    def __init__(self) -> None:
        self.contacts: list[str] = []
        self.tcp = socket.create_server(("0.0.0.0", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.abstract = f"hl-reliability-{secrets.token_hex(4)}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.abstract)
        self.unix.listen(4)
        self.stop = threading.Event()
        for sock, kind in ((self.tcp, "tcp"), (self.udp, "udp"), (self.unix, "unix")):
            sock.settimeout(0.2)
            threading.Thread(target=self._watch, args=(sock, kind), daemon=True).start()

    def _watch(self, sock: socket.socket, kind: str) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError):
                if kind == "udp":
                    sock.recvfrom(64)
                else:
                    sock.accept()[0].close()
                self.contacts.append(kind)

    def close(self) -> None:
        self.stop.set()
        time.sleep(0.3)
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


@dataclass
class HostileEnv:
    root: Path
    server: Any
    token: str = field(default_factory=lambda: "tok" + secrets.token_hex(12))
    gold: str = field(default_factory=lambda: "gold" + secrets.token_hex(8))
    listeners: Listeners = field(default_factory=Listeners)
    sentinel: subprocess.Popen | None = None
    host_hashes: dict[str, str] = field(default_factory=dict)
    store_rows: list = field(default_factory=list)

    def plant(self) -> dict[str, Any]:
        """Write the targets; returns what the harness code is told (`P`)."""
        import harness_learning.harnesses.contract as contract
        from harness_learning.evals.samples import data_dir
        from harness_learning.harnesses.store import SQLiteLogStore

        (self.root / "host").mkdir(parents=True)
        (self.root / "host" / "keep.txt").write_text("host data\n")
        (self.root / "secret.txt").write_text(self.token)
        dataset = self.root / "dataset.jsonl"
        dataset.write_text(json.dumps({"id": "secret", "gold": self.gold}) + "\n")
        store = SQLiteLogStore(self.root / "run")
        store.init_run({"task": "sums"})
        sha = store.put_version("def build_graph(tools):\n    pass\n", parent=None, round_=0)
        store.put_results(sha, "selection", 1, [ProblemResult("secret", self.gold, 1.0)])
        store.close()
        self.sentinel = subprocess.Popen(["sleep", "3600"])
        os.environ[SECRET_ENV] = self.token  # before any worker starts: it must not inherit it
        self.host_hashes = self.snapshot()
        self.store_rows = self.rows()
        site = next(p for p in sys.path if p.endswith("site-packages"))
        return {"token_file": str(self.root / "secret.txt"), "host_dir": str(self.root / "host"),
                "run_dir": str(self.root / "run"), "dataset": str(dataset),
                "data_dir": str(data_dir()), "port": self.listeners.tcp.getsockname()[1],
                "udp_port": self.listeners.udp.getsockname()[1], "abstract": self.listeners.abstract,
                "host_ip": host_ip(), "sentinel": self.sentinel.pid, "parent": os.getpid(),
                "contract": contract.__file__, "site": site,
                "token": self.token, "secret_env": SECRET_ENV,
                "sim_port": self.server.port, "project_root": str(Path(contract.__file__).parents[1])}

    def snapshot(self) -> dict[str, str]:
        import harness_learning.harnesses.contract as contract

        hashes = {k: v for k, v in file_hashes(self.root).items()
                  if not k.endswith(("-wal", "-shm"))}  # a reader may create these
        hashes["contract"] = file_hashes(Path(contract.__file__).parent)["contract.py"]
        return hashes

    def rows(self) -> list:
        """Everything the planted log holds (its evaluations and versions)."""
        conn = connect_read_only(self.root / 'run' / 'log.sqlite')
        try:
            return [conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                    for t in ("evaluations", "versions", "decisions")]
        finally:
            conn.close()

    def close(self) -> None:
        os.environ.pop(SECRET_ENV, None)
        self.listeners.close()
        if self.sentinel is not None:
            self.sentinel.kill()
            self.sentinel.wait()


def host_ip() -> str:
    """An address of this host other than loopback (a 'remote' target that is reachable)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    return socket.gethostbyname(socket.gethostname())


def _text(result: ProblemResult) -> str:
    return " ".join(str(x) for x in (result.answer, result.error, result.traceback) if x)


def _leftovers(marker: str) -> list[int]:
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


CHECKS: dict[str, Any] = {
    "no_token": lambda r, e, d: (e.token not in _text(r), "the secret never reached the harness"),
    "no_shadow": lambda r, e, d: ("root:" not in (r.answer or ""), "/etc/shadow unreadable"),
    "all_read_only": lambda r, e, d: (r.answer == "blocked: all read-only",
                                      "no mounted path but /tmp, /scratch and /dev/shm took a write"),
    "host_intact": lambda r, e, d: (e.snapshot() == e.host_hashes, "host files unchanged"),
    "project_intact": lambda r, e, d: (e.snapshot() == e.host_hashes, "project files unchanged"),
    "no_sitecustomize": lambda r, e, d: (
        not Path(next(p for p in sys.path if p.endswith("site-packages")), "sitecustomize.py").exists(),
        "no sitecustomize.py in the virtualenv"),
    "no_connection": lambda r, e, d: (not e.listeners.contacts, "the host's listeners saw nothing"),
    "sentinel_alive": lambda r, e, d: (e.sentinel.poll() is None and os.getppid() > 0,
                                       "the sentinel and this process are alive"),
    "recorded_zero": lambda r, e, d: (r.score == 0.0 and bool(r.error), "scored 0 with a reason"),
    "no_leftover": lambda r, e, d: (not _leftovers(d["marker"]), "no process outlived the worker"),
    "bounded_count": lambda r, e, d: (_count(r) is not None and _count(r) < d["bound"],
                                      "stopped below the limit"),
    "scratch_bounded": lambda r, e, d: (
        not _scratch_files("fill*") and r.score == 0.0
        and (_count(r) is not None and _count(r) <= LIMITS.scratch_mb // 4
             or "Limits.scratch_mb" in (r.error or "")),
        "stopped at the scratch limit, the files are gone"),
    "memory_capped": lambda r, e, d: (d["rss_growth"] < 48 << 20,
                                      "this process kept < 48 MiB of the flood"),
    "no_huge_request": lambda r, e, d: (max(map(len, e.server.prompts), default=0) < 1 << 20,
                                        "no huge prompt reached the endpoint"),
    "no_direct_call": lambda r, e, d: (not any("direct-call" in p for p in e.server.prompts),
                                       "the Solver endpoint never saw the call"),
    "score_zero": lambda r, e, d: (r.score == 0.0 and e.gold not in (r.answer or ""), "scored 0"),
    "store_intact": lambda r, e, d: (integrity(RunDir(e.root / "run").log) == "ok"
                                     and e.rows() == e.store_rows and r.score == 0.0,
                                     "log unchanged and sound"),
    "calls_match": lambda r, e, d: (
        sum(c.tool == "llm" and c.error is None for c in r.calls)
        == sum("[hide-calls]" in p for p in e.server.prompts) == 3 and r.tokens > 0,
        "the parent's trace counts every Solver call"),
    "solver_capped": lambda r, e, d: (
        r.score == 0.0 and "Solver calls" in (r.error or "")
        and sum("[flood]" in p for p in e.server.prompts) <= LIMITS.llm_calls_per_problem,
        "stopped at the per-problem Solver call cap"),
    "tools_capped": lambda r, e, d: (
        r.score == 0.0 and "tool calls" in (r.error or "")
        and len(r.calls) <= LIMITS.tool_calls_per_problem,
        "stopped at the per-problem tool call cap"),
    "held_to_its_time": lambda r, e, d: (
        r.score == 0.0 and r.error_kind == "timeout"
        and r.latency_s < 3 * LIMITS.problem_timeout_s,
        "its tools.python runs counted: a timeout well before 40 runs of 1 s ended"),
    "no_persistence": lambda r, e, d: (d["next_sees"] is False, "the next candidate saw nothing"),
    **checks(LIMITS),
    **EDGE_CHECKS,
}


def _count(result: ProblemResult) -> int | None:
    with contextlib.suppress(Exception):
        return int(str(result.answer).split()[1])
    return None


def _scratch_files(pattern: str) -> list[Path]:
    import tempfile

    return list(Path(tempfile.gettempdir()).glob(f"hl-sbx-*/{pattern}"))


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def group_limits(cases: list[Case]) -> Limits:
    """The suite's limits, with the longest problem time a case of the group asks for (a case
    that must wait for several processes to settle on a busy machine)."""
    longest = max((c.timeout_s for c in cases if c.timeout_s), default=None)
    return LIMITS if longest is None else replace(LIMITS, problem_timeout_s=longest)


def problem_for(case: Case, env: HostileEnv) -> Problem:
    gold = env.gold if case.problem == "secret" else "4"
    return Problem(case.name, {"question": case.name}, gold)


async def run_group(cases: list[Case], env: HostileEnv, plant: dict, pool: WorkerPool,
                    toolbox: Any, task: Any) -> list[dict[str, Any]]:
    """Evaluate `cases` in one worker (one problem each), then check each from the outside."""
    plant = {**plant, "marker": f"3600.{secrets.randbelow(10**6)}"}
    data: dict[str, Any] = {}
    settings = {c.setting for c in cases}
    if "judge" in settings:
        task = judged_task(env.server)
        if GULLIBLE_JUDGE not in env.server.config.rules:
            env.server.config.rules.insert(0, GULLIBLE_JUDGE)
    if "ledger" in settings:
        toolbox = ledger_toolbox(toolbox)
        data["ledger"] = toolbox.ledger
    rss = _rss()
    t0 = time.perf_counter()
    source = harness(cases, plant)
    evaluation = await evaluate(source, [problem_for(c, env) for c in cases], task, toolbox,
                                pool=pool, limits=group_limits(cases), concurrency=1,
                                line_limit=5000)
    await asyncio.sleep(0.2)
    data.update({"rss_growth": _rss() - rss, "bound": LIMITS.pids, "marker": plant["marker"]})
    if any(c.check == "no_persistence" for c in cases):
        probe = Case("probe", "escape", "found = [p for p in ('/tmp/persist.txt', 'persist.txt') "
                     "if os.path.exists(p)]\nanswer = 'seen' if found else 'clean'", "none")
        nxt = await evaluate(harness([probe], plant), [problem_for(probe, env)], task, toolbox,
                             pool=pool, limits=LIMITS, line_limit=5000)
        data["next_sees"] = nxt.results[0].answer != "clean"
    seconds = round(time.perf_counter() - t0, 2)
    rows = []
    for case, result in zip(cases, evaluation.results, strict=True):
        if case.name == "tmpfs_disk_fill":
            data["bound"] = 65  # MiB: the sandbox's /tmp is a 64 MiB tmpfs
        try:
            ok, how = CHECKS[case.check](result, env, data)
        except Exception as exc:  # a surface that raises on what the harness produced
            ok, how = False, f"the check raised {type(exc).__name__}: {str(exc)[:200]}"
        reason = for_terminal(f"{result.error_kind or 'answered'}: "
                              f"{(result.error or result.answer or '')[:160]}", newlines=False)
        rows.append({"case": case.name, "category": case.category, "contained": bool(ok),
                     "backend": getattr(pool.backend, "name", ""),
                     "recorded": bool(result.error or result.answer is not None), "check": how,
                     "reason": reason, "score": result.score,
                     "seconds": seconds})
    return rows


async def run_catalogue(root: Path, server: Any, cases: list[Case] | None = None,
                        log: Any = None, parallel: int = 2, backend: Any = None,
                        ) -> list[dict[str, Any]]:
    """Run `cases` (default: all) on `backend` (default: the one `HARNESS_SANDBOX` names), its
    workers and their `tools.python` calls alike: the harmless ones together in one worker,
    each `solo` case in its own (`parallel` at a time); returns one row per case, in catalogue
    order."""
    from harness_learning.harnesses.llm import get_client
    from harness_learning.harnesses.sandbox.backend import default_backend
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning_lab.reliability.common import SumTask

    env = HostileEnv(Path(root), server)
    plant = env.plant()
    # Workers other code in this process keeps warm (e.g. embedded harnesses) are not ours.
    already_running = set(sandbox_leftovers())
    backend = backend or await asyncio.to_thread(default_backend)
    have = await asyncio.to_thread(backend.protections)
    bwrap = have.get("read_only_root", False) and have.get("network_isolated", False)
    toolbox = Toolbox(solver=get_client(f"openai/sim@{server.url}?max_retries=0&timeout_s=10"),
                      backend=backend)
    await toolbox.solver.acomplete("What is 1 + 1?")  # the model layer's imports: not a case's time
    chosen = cases or CASES
    runnable = [c for c in chosen if bwrap or not c.needs_bwrap]
    groups = [[c] for c in runnable if c.solo]
    shared = [c for c in runnable if not c.solo]
    if shared:
        groups.insert(0, shared)
    gate = asyncio.Semaphore(parallel)
    done: dict[str, dict[str, Any]] = {}

    async def one(group: list[Case], pool: WorkerPool) -> None:
        async with gate:
            for row in await run_group(group, env, plant, pool, toolbox, SumTask()):
                done[row["case"]] = row
                if log:
                    log(f"{row['case']}: {'contained' if row['contained'] else 'NOT CONTAINED'}"
                        f" ({row['reason'][:80]})")

    try:
        async with WorkerPool(size=parallel, limits=LIMITS, backend=backend) as pool:
            await asyncio.gather(*(one(g, pool) for g in groups))
    finally:
        env.close()
    leftovers = len(set(sandbox_leftovers()) - already_running)
    leftovers += await asyncio.to_thread(containers_left, backend)
    return [{**done[c.name], "leftover_workers": leftovers} if c.name in done
            else {"case": c.name, "category": c.category, "skipped": "needs bubblewrap"}
            for c in chosen]
