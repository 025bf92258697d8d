"""The local backend: a subprocess with rlimits, bubblewrap namespaces and a seccomp filter
where present, and one cgroup per candidate where one can be made.

Filesystem view under bubblewrap: the root is an empty read-only tmpfs; only what Python needs
is bound read-only (/usr, /lib, /lib64, /bin, a few /etc files, the interpreter's standard
library, the virtualenv with a curated site-packages (`imports`: the allowlist of what harness
code may import; no dataset generator, no numpy, no model clients), and the project's
`harness_learning`, `harnesses` and `retrieval` package directories). The curated view and the
emptied package directories are mounted at every path a bind makes them reachable by (an
environment reached through a symlink is bound at its real path too, and /lib is /usr/lib on a
merged /usr): one path left showing the full site-packages would hand harness code the dataset
generator with one `sys.path.append`. We do not bind `/`: run
directories, datasets with gold answers and /etc/shadow stay invisible. This matters because,
started by root, the sandbox's uid maps to root outside, so any bound root-owned file is
readable. /tmp, /dev/shm and the scratch directory are size-limited tmpfs mounts and /dev is
read-only (no host path is writable), the network namespace holds only its own loopback, all
capabilities are dropped, no user namespace can be nested (`--disable-userns`) and the
`seccomp` filter refuses the kernel interfaces harness code never needs (the /tmp tmpfs is
mounted before the binds, so a virtualenv under /tmp stays visible). rlimits are set by the
sandboxed program itself before it reads untrusted input (no `preexec_fn`: it can deadlock a
threaded parent). The candidate's cgroup (`cgroups`: memory, pids, CPU) is joined by a `sh`
trampoline before `exec`, so every descendant is counted; a `tools.python` process joins a
child group of its candidate's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from harness_learning.harnesses.offline import OFFLINE_ENV
from harness_learning.harnesses.sandbox import seccomp
from harness_learning.harnesses.sandbox.backend import (
    SandboxBackend,
    SandboxProcess,
    file_work,
    in_thread,
    sandbox_backend,
)
from harness_learning.harnesses.sandbox.cgroups import (
    CANDIDATE_GROUP,
    Cgroups,
    Group,
    Spec,
    Usage,
)
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.protocol import LIMITS_ENV, MAX_MESSAGE_BYTES
from harness_learning.harnesses.sandbox.view import SYSTEM_DIRS, view_mounts

SCRATCH = "/scratch"
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
             "nsswitch.conf", "hosts", "alternatives", "mime.types")
TMPFS_BYTES = 64 * 1024 * 1024


EMPTY_BYTES = 16 * 1024


def view_argv() -> list[str]:
    """`view_mounts` as bubblewrap arguments. An emptied directory is a tiny tmpfs remounted
    read-only: `--remount-ro /` covers the root mount only, and a writable one would be
    scratch space of half the RAM that outlives each problem in the worker."""
    argv: list[str] = []
    for source, target in view_mounts():
        if source is None:
            argv += ["--size", str(EMPTY_BYTES), "--tmpfs", target, "--remount-ro", target]
        else:
            argv += ["--ro-bind", source, target]
    return argv


def bwrap_argv(scratch_bytes: int, env: dict[str, str], *, shm_bytes: int = TMPFS_BYTES,
               seccomp_fd: int | None = None, disable_userns: bool = True) -> list[str]:
    """The bubblewrap prefix: what is visible, what is writable, which namespaces. The scratch
    directory, /tmp and /dev/shm are tmpfs mounts of bounded size, so the kernel enforces it."""
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user",
            "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL", "--die-with-parent",
            "--new-session", "--clearenv", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    if disable_userns:
        argv.append("--disable-userns")
    for d in SYSTEM_DIRS:
        argv += ["--ro-bind-try", d, d]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += view_argv()
    argv += ["--dev", "/dev", "--size", str(shm_bytes), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--proc", "/proc", "--size", str(scratch_bytes),
             "--tmpfs", SCRATCH, "--remount-ro", "/", "--chdir", SCRATCH]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return argv


def base_env(home: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A scrubbed environment: nothing of the parent's, no credentials."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": "/tmp",
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
           "MALLOC_ARENA_MAX": "2", **OFFLINE_ENV}
    env.update(extra or {})
    return env


def _bwrap_runs(**options: object) -> bool:
    fd = seccomp.filter_fd() if options.pop("seccomp", False) else None
    try:
        argv = bwrap_argv(TMPFS_BYTES, {}, seccomp_fd=fd, **options) + [sys.executable, "-c", "pass"]
        done = subprocess.run(argv, capture_output=True, timeout=20,
                              pass_fds=() if fd is None else (fd,))
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError, ValueError):
        return False
    finally:
        if fd is not None:
            os.close(fd)


@functools.cache
def bwrap_features() -> dict[str, bool]:
    """Which bubblewrap protections work here: the sandbox itself, `--disable-userns` (0.8+)
    and the seccomp filter (CI containers may forbid some)."""
    if shutil.which("bwrap") is None:
        return {"bwrap": False, "userns_disabled": False, "seccomp": False}
    userns = _bwrap_runs(disable_userns=True)
    works = userns or _bwrap_runs(disable_userns=False)
    return {"bwrap": works, "userns_disabled": userns,
            "seccomp": works and _bwrap_runs(disable_userns=userns, seccomp=True)}


@dataclass
class LocalProcess(SandboxProcess):
    """A started sandbox process and what must be cleaned up after it."""

    proc: asyncio.subprocess.Process
    scratch: str
    group: Group | None
    protections: dict[str, bool] = field(default_factory=dict)
    limit_hit: str | None = None
    """Why the backend killed the process, when it did (a limit the kernel cannot enforce)."""
    _watch: asyncio.Task | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """Kill the process and everything it started (its session at once; its cgroup through
        the cgroup's files, in a worker thread when called on an event loop)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.returncode is None:  # not Popen.kill: its poll() reaps behind asyncio's back
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGKILL)
        if self.group is not None:
            file_work(self.group.kill)

    def usage(self) -> Usage | None:
        """What the candidate's cgroup counted against its limits (None without a cgroup):
        file reads, so call it from a worker thread on an event loop."""
        return self.group.usage() if self.group is not None else None

    def watch_scratch(self, limit_mb: int, every_s: float = 0.5) -> None:
        """Without a tmpfs to bound it, measure the scratch directory and kill past `limit_mb`."""

        async def watch() -> None:
            while self.proc.returncode is None:
                await asyncio.sleep(every_s)
                used = await asyncio.to_thread(tree_bytes, self.scratch)
                if used > limit_mb << 20:
                    self.limit_hit = (f"the scratch directory passed its {limit_mb} MB limit "
                                      f"(Limits.scratch_mb)")
                    self.kill()
                    return

        self._watch = asyncio.ensure_future(watch())

    async def cleanup(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self.kill()
        with contextlib.suppress(ProcessLookupError, asyncio.TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 5)
        if self.group is not None:  # cgroup files and the scratch tree: file work, in a thread
            for _ in range(100):
                if await in_thread(self.group.remove):
                    break
                self.kill()  # members still exiting
                await asyncio.sleep(0.02)
        await in_thread(functools.partial(shutil.rmtree, self.scratch, ignore_errors=True))


def tree_bytes(root: str) -> int:
    """Bytes of the regular files under `root` (links not followed; vanishing files skipped)."""
    total, stack = 0, [root]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
    return total


def nproc_limit(limits: Limits, cgroup: bool) -> int | None:
    """RLIMIT_NPROC counts every process and thread of the user on the whole machine, and does
    not bind root at all: set it only where it is the sole bound (no cgroup, not root), as the
    user's current count plus the sandbox's allowance."""
    if cgroup or os.geteuid() == 0:
        return None
    try:
        import psutil

        uid = os.getuid()
        current = sum(p.info["num_threads"] or 0 for p in psutil.process_iter(["uids", "num_threads"])
                      if p.info["uids"] and p.info["uids"].real == uid)
    except Exception:
        return None
    return current + limits.pids


@sandbox_backend("local")
class LocalBackend(SandboxBackend):
    """Subprocess + rlimits (+ bubblewrap and seccomp, + a cgroup per candidate when available)."""

    def __init__(self, use_bwrap: bool | None = None, use_cgroup: bool | None = None) -> None:
        features = bwrap_features()
        self.use_bwrap = features["bwrap"] if use_bwrap is None else use_bwrap
        self.use_seccomp = self.use_bwrap and features["seccomp"]
        self.disable_userns = self.use_bwrap and features["userns_disabled"]
        self.cgroups = Cgroups.probe() if use_cgroup in (None, True) else None
        self.use_cgroup = self.cgroups is not None

    def protections(self) -> dict[str, bool]:
        controls = self.cgroups.controls() if self.cgroups else []
        return {"rlimits": True, "bwrap": self.use_bwrap, "network_isolated": self.use_bwrap,
                "read_only_root": self.use_bwrap, "import_allowlist": self.use_bwrap,
                "seccomp": self.use_seccomp, "userns_disabled": self.disable_userns,
                "shm_bounded": self.use_bwrap, "cgroup_pids": "pids" in controls,
                "cgroup_memory": "memory" in controls, "cgroup_cpu": "cpu" in controls,
                "cgroup_per_candidate": self.use_cgroup, "scrubbed_env": True, "bounded_logs": True,
                "line_limit": True, "auto_remove": self.use_bwrap, "orphan_sweep": True}

    def _group(self, limits: Limits, within: Group | None) -> Group | None:
        """The process's cgroup: a child of `within` (a `tools.python` call's candidate), else
        a new candidate group."""
        if self.cgroups is None:
            return None
        spec = Spec(limits.memory_mb << 20, limits.pids, limits.cpu_cores)
        return within.child(spec) if within is not None else self.cgroups.make(spec)

    async def spawn(
        self,
        args: list[str],
        limits: Limits,
        env: dict[str, str],
        *,
        pass_fds: tuple[int, ...] = (),
        stdin: int = subprocess.DEVNULL,
        within: Group | None = None,
    ) -> LocalProcess:
        """Start `python <args>` in a fresh sandbox. `env` is added to the scrubbed base;
        `within` (default: the candidate whose tool call this is, `CANDIDATE_GROUP`) puts the
        process inside that candidate's cgroup. The preparation (scratch directory, cgroup
        files, seccomp filter, the process census of `nproc_limit`) is file work done in a
        thread: the caller's event loop may be a server's, shared with other runs."""
        group_in = within if within is not None else CANDIDATE_GROUP.get()
        scratch, argv, full_env, group, filter_fd = await asyncio.to_thread(
            self._prepare, args, limits, env, group_in)
        fds = pass_fds if filter_fd is None else (*pass_fds, filter_fd)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=fds, env=full_env, cwd=scratch, start_new_session=True,
                limit=MAX_MESSAGE_BYTES,
            )
        except BaseException:
            await asyncio.to_thread(_discard, group, scratch)
            raise
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        process = LocalProcess(proc, scratch, group, self.protections())
        if not self.use_bwrap:
            process.watch_scratch(limits.scratch_mb)
        return process

    def _prepare(self, args: list[str], limits: Limits, env: dict[str, str],
                 within: Group | None) -> tuple[str, list[str], dict[str, str], Group | None,
                                                int | None]:
        """(scratch dir, argv, environment, cgroup, seccomp filter fd) of one process."""
        sweep_stale_scratch()
        scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
        os.chmod(scratch, 0o777)
        home = SCRATCH if self.use_bwrap else scratch
        env = dict(env)
        if LIMITS_ENV in env:
            settings = json.loads(env[LIMITS_ENV])
            settings["nproc"] = nproc_limit(limits, self.use_cgroup)
            env[LIMITS_ENV] = json.dumps(settings)
        full_env = base_env(home, env)
        argv = [sys.executable, "-s", *args]
        group = filter_fd = None
        try:
            filter_fd = seccomp.filter_fd() if self.use_seccomp else None
            if self.use_bwrap:
                argv = bwrap_argv(limits.scratch_mb << 20, full_env,
                                  shm_bytes=limits.shm_mb << 20, seccomp_fd=filter_fd,
                                  disable_userns=self.disable_userns) + argv
            group = self._group(limits, within)
            if group is not None:
                joins = [str(p) for p in group.procs]
                argv = ["/bin/sh", "-c", JOIN, "sh", str(len(joins)), *joins, *argv]
        except BaseException:
            if filter_fd is not None:
                os.close(filter_fd)
            _discard(group, scratch)
            raise
        return scratch, argv, full_env, group, filter_fd


SCRATCH_PREFIX = "hl-sbx-"
"""Scratch directories are `hl-sbx-<parent pid>-<random>` in the temporary directory."""


@functools.cache
def sweep_stale_scratch() -> None:
    """Once per process, remove the scratch directories of parents that no longer run. A
    parent killed outright (SIGKILL, a machine that lost power) never removes its own."""
    sweep_scratch(tempfile.gettempdir())


def sweep_scratch(root: str) -> list[str]:
    """Remove `root`'s scratch directories that this user owns and whose parent pid is not
    alive; the removed paths. Anyone may name a directory in /tmp: a name that is no pid is
    left alone."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            pid = entry.name.removeprefix(SCRATCH_PREFIX).partition("-")[0]
            if (entry.name.startswith(SCRATCH_PREFIX) and pid.isascii() and pid.isdigit()
                    and entry.stat(follow_symlinks=False).st_uid == os.getuid()
                    and _dead(int(pid))):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    return removed


def _dead(pid: int) -> bool:
    """Whether no process has this pid (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's process; no pid at all
        return False
    return False


def _discard(group: Group | None, scratch: str) -> None:
    """Undo a preparation whose process never started."""
    if group is not None:
        group.remove()
    shutil.rmtree(scratch, ignore_errors=True)


JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n-1)); done; exec "$@"'
"""The trampoline: join each cgroup (argv: count, procs files..., command), then exec."""
