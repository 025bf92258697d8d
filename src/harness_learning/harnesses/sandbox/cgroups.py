"""One control group per candidate: memory, processes and CPU bounded for the worker *and*
everything it or its `tools.python` calls start.

rlimits bind one process at a time (five children of 400 MiB each pass a 512 MiB address
limit), and RLIMIT_NPROC does not bind root; a cgroup counts the whole tree. A `tools.python`
process gets a child group inside its candidate's group: its own smaller limits, and its use
charged to the candidate's total as well (both hierarchies nest their accounting), so fanning
calls out cannot multiply a candidate's memory.

cgroup v2 is used where it is mounted with the memory and pids controllers at
/sys/fs/cgroup; otherwise the v1 `memory`, `pids` and `cpu` hierarchies (CPU is bounded only
where its controller is writable). `Cgroups.probe()` says which one works here; where none does,
the caller falls back to rlimits and says so (see `LocalBackend.protections`).

A candidate group is named after the process that made it (`w-PID-...`). A parent killed with
SIGKILL never removes its groups, and the next process to use the hierarchy sweeps them
(`Cgroups.sweep`, once per process at `probe`): a group whose owner is gone has its members
killed and is removed. A group whose owner is alive is never touched: two runs (two test
workers) use the hierarchy at once. Groups named before owners were (`w-HEX`) are removed
only when empty and untouched for `UNOWNED_STALE_S`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
GROUP = "harness-learning"
CPU_PERIOD_US = 100_000
UNOWNED_STALE_S = 3600.0
"""Age of an empty group without an owner in its name before a sweep removes it (such a group
is joined within a second of its making; one this old is a leftover)."""
_NAME = re.compile(r"^w-(?:(?P<owner>\d+)-)?[0-9a-f]{10,12}$")


@dataclass(frozen=True)
class Spec:
    """What one group allows: bytes of memory (tmpfs pages written count too), processes and
    threads, and CPU cores (None: unbounded)."""

    memory_bytes: int
    pids: int
    cpu_cores: float | None = None


class Group:
    """A created group (one directory per hierarchy); `procs` are the files a process joins."""

    def __init__(self, dirs: list[Path], version: int, leaf: str | None = None) -> None:
        self.dirs, self.version, self.leaf = dirs, version, leaf

    @property
    def procs(self) -> list[Path]:
        """v2 keeps processes out of a group whose children have controllers, so there the
        members join a `main` leaf and `tools.python` groups sit beside it."""
        return [(d / self.leaf if self.leaf else d) / "cgroup.procs" for d in self.dirs]

    def child(self, spec: Spec) -> Group:
        """A nested group (a `tools.python` process inside its candidate's group)."""
        return _make([d / f"py-{uuid.uuid4().hex[:10]}" for d in self.dirs], self.version, spec,
                     nest=False)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:  # the group (or a child group) may be removed while it is walked
                paths = [d, *d.rglob("*")] if d.exists() else []
            except OSError:
                paths = [d]
            for path in paths:
                with contextlib.suppress(OSError, ValueError):
                    if path.is_dir():
                        found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return found

    def kill(self) -> None:
        """SIGKILL every member (v2: `cgroup.kill` where the kernel has it)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def usage(self) -> Usage:
        """What the kernel counted against the group's limits so far, from the files of either
        hierarchy (v1: memory.oom_control, memory.failcnt, pids.events, cpu.stat; v2:
        memory.events, pids.events, cpu.stat). A file this kernel lacks counts as 0."""
        counts = {"oom_kill": 0, "memory_max": 0, "pids_max": 0, "nr_throttled": 0}
        for d in self.dirs:
            for name, key, into in _COUNTERS:
                value = _counter(d / name, key)
                counts[into] = max(counts[into], value)
        return Usage(counts["oom_kill"], counts["memory_max"], counts["pids_max"],
                     counts["nr_throttled"])

    def remove(self) -> bool:
        """Remove the group (children first); False while members are still exiting. A child
        group may vanish while the tree is walked (its own run removes it from another thread):
        `os.walk` skips what it can no longer list, and a directory already gone is removed."""
        ok = True
        for d in self.dirs:
            for path, _, _ in os.walk(d, topdown=False):  # children before their parent
                try:
                    os.rmdir(path)
                except FileNotFoundError:
                    pass
                except OSError:
                    ok = False
        return ok


@dataclass(frozen=True)
class Usage:
    """Counts of a group's limits being reached: processes the memory limit's OOM killer ended,
    times memory was charged at the limit, forks refused at the process limit, CPU periods
    throttled at the CPU share."""

    oom_kills: int = 0
    memory_capped: int = 0
    pids_capped: int = 0
    cpu_throttled: int = 0


_COUNTERS = (
    ("memory.oom_control", "oom_kill", "oom_kill"),  # v1
    ("memory.failcnt", None, "memory_max"),  # v1
    ("memory.memsw.failcnt", None, "memory_max"),  # v1, with swap accounting
    ("memory.events", "oom_kill", "oom_kill"),  # v2
    ("memory.events", "max", "memory_max"),  # v2
    ("pids.events", "max", "pids_max"),  # both
    ("cpu.stat", "nr_throttled", "nr_throttled"),  # both
)
"""(file, key in its "key value" lines or None for a file holding one number, what it counts)."""


def _counter(path: Path, key: str | None) -> int:
    """One counter of a cgroup file; 0 where the file or the key is absent."""
    try:
        text = path.read_text()
    except OSError:
        return 0
    try:
        if key is None:
            return int(text.strip() or 0)
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
    except ValueError:
        return 0
    return 0


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _make(dirs: list[Path], version: int, spec: Spec, nest: bool = True) -> Group:
    """Directories with `spec` written; in v2 a top-level group also enables its controllers
    for children and gets its `main` leaf."""
    made: list[Path] = []
    leaf = "main" if version == 2 and nest else None
    try:
        for d in dirs:
            d.mkdir(parents=True)
            made.append(d)
            _limit(d, version, spec)
            if leaf:
                _write(d / "cgroup.subtree_control", "+memory +pids")
                (d / leaf).mkdir()
    except OSError:
        Group(made, version).remove()
        raise
    return Group(dirs, version, leaf)


def _limit(d: Path, version: int, spec: Spec) -> None:
    """Write `spec` into the files of directory `d` that belong to its hierarchy."""
    if version == 2:
        _write(d / "memory.max", str(spec.memory_bytes))
        with contextlib.suppress(OSError):
            _write(d / "memory.swap.max", "0")
        _write(d / "pids.max", str(spec.pids))
        if spec.cpu_cores is not None and (d / "cpu.max").exists():
            _write(d / "cpu.max", f"{int(spec.cpu_cores * CPU_PERIOD_US)} {CPU_PERIOD_US}")
        return
    kind = d.relative_to(ROOT).parts[0]
    if kind == "memory":
        _write(d / "memory.limit_in_bytes", str(spec.memory_bytes))
        with contextlib.suppress(OSError):  # swap accounting may be off
            _write(d / "memory.memsw.limit_in_bytes", str(spec.memory_bytes))
    elif kind == "pids":
        _write(d / "pids.max", str(spec.pids))
    elif kind == "cpu" and spec.cpu_cores is not None:
        _write(d / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(d / "cpu.cfs_quota_us", str(int(spec.cpu_cores * CPU_PERIOD_US)))


def _v2_ready() -> bool:
    try:
        controllers = (ROOT / "cgroup.controllers").read_text().split()
    except OSError:
        return False
    return {"memory", "pids"} <= set(controllers)


class Cgroups:
    """Makes candidate groups under one parent group of this project, in v2 or v1."""

    def __init__(self, version: int, bases: list[Path]) -> None:
        self.version, self.bases = version, bases

    @staticmethod
    @functools.cache
    def probe() -> Cgroups | None:
        """The hierarchy usable here (a probe group is made and removed), or None."""
        if _v2_ready():
            base = ROOT / GROUP
            candidates = [Cgroups(2, [base])]
            with contextlib.suppress(OSError):
                base.mkdir(exist_ok=True)
                _write(base / "cgroup.subtree_control", "+memory +pids +cpu")
        else:
            v1 = [ROOT / kind / GROUP for kind in ("memory", "pids")]
            cpu = ROOT / "cpu" / GROUP
            candidates = [Cgroups(1, [*v1, cpu]), Cgroups(1, v1)]
        for cg in candidates:
            try:
                cg.make(Spec(64 << 20, 8, 1.0)).remove()
            except OSError:
                continue
            with contextlib.suppress(OSError):
                cg.sweep()
            return cg
        return None

    def make(self, spec: Spec) -> Group:
        for base in self.bases:
            base.mkdir(exist_ok=True)
        name = f"w-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        return _make([b / name for b in self.bases], self.version, spec)

    def sweep(self) -> list[str]:
        """Kill the members of, and remove, each candidate group whose owner process is gone
        (and each empty stale group without an owner); returns the names removed."""
        found: dict[str, list[Path]] = {}
        for base in self.bases:
            with contextlib.suppress(OSError):
                for d in base.iterdir():
                    if _NAME.match(d.name) and d.is_dir():
                        found.setdefault(d.name, []).append(d)
        swept = []
        for name, dirs in sorted(found.items()):
            owner = _NAME.match(name)["owner"]  # type: ignore[index]
            group = Group(dirs, self.version, "main" if self.version == 2 else None)
            if owner is not None:
                if _alive(int(owner)):
                    continue
                group.kill()
            elif group.pids() or not _stale(dirs):
                continue
            if _removed(group):
                swept.append(name)
        return swept

    def controls(self) -> list[str]:
        if self.version == 2:
            return ["memory", "pids", "cpu"]
        return [b.parent.name for b in self.bases]


def _alive(pid: int) -> bool:
    """Whether process `pid` exists here (a zombie still does: its parent has not reaped it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def _stale(dirs: list[Path]) -> bool:
    try:
        return all(time.time() - d.stat().st_mtime > UNOWNED_STALE_S for d in dirs)
    except OSError:
        return False


def _removed(group: Group) -> bool:
    """Remove `group`, waiting up to a second for its killed members to exit."""
    for _ in range(20):
        if group.remove():
            return True
        time.sleep(0.05)
    return False


CANDIDATE_GROUP: contextvars.ContextVar[Group | None] = contextvars.ContextVar(
    "candidate_group", default=None)
"""The group of the candidate whose tool call is being served (set by the parent's bridge
while it serves a call), so a `tools.python` process lands inside its candidate's limits."""
