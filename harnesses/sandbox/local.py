"""The local backend: a subprocess with rlimits, bubblewrap namespaces where present, and a
pids cgroup where writable.

Filesystem view under bubblewrap: the root is an empty read-only tmpfs; only what Python needs
is bound read-only (/usr, /lib, /lib64, /bin, a few /etc files, the interpreter's base prefix,
the virtualenv, and the project's `harness_learning`, `harnesses` and `retrieval` package directories). We do not
bind `/`: run directories, datasets with gold answers and /etc/shadow stay invisible. This
matters because, started by root, the sandbox's uid maps to root outside, so any bound
root-owned file is readable. /tmp and the scratch directory are size-limited tmpfs mounts
(no host path is writable), the network namespace holds only its own loopback, and all
capabilities are dropped (the /tmp tmpfs is mounted before the binds, so a virtualenv under
/tmp stays visible). rlimits are set by the sandboxed program itself before it reads untrusted input
(no `preexec_fn`: it can deadlock a threaded parent). The pids cgroup is joined by a `sh`
trampoline before `exec`, so every descendant is counted.
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
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from harness_learning.harnesses.offline import OFFLINE_ENV
from harness_learning.harnesses.sandbox.backend import (
    SandboxBackend,
    SandboxProcess,
    sandbox_backend,
)
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.protocol import LIMITS_ENV, MAX_MESSAGE_BYTES

CGROUP_PIDS = Path("/sys/fs/cgroup/pids")
CGROUP_GROUP = "harness-learning"
SCRATCH = "/scratch"
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
             "nsswitch.conf", "hosts", "alternatives", "mime.types")
TMPFS_BYTES = 64 * 1024 * 1024


def project_dirs() -> list[str]:
    """The package directories a worker imports from this project: the namespace package and
    the two layers it runs (in an editable install they are separate folders)."""
    import harness_learning
    from harness_learning import harnesses, retrieval

    dirs = [str(Path(m.__file__).resolve().parent) for m in (harness_learning, harnesses, retrieval)]
    return list(dict.fromkeys(dirs))


def python_dirs() -> list[str]:
    dirs = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix}
    return sorted(d for d in dirs if os.path.isdir(d))


def bwrap_argv(scratch_bytes: int, env: dict[str, str]) -> list[str]:
    """The bubblewrap prefix: what is visible, what is writable, which namespaces. The scratch
    directory is a tmpfs of `scratch_bytes`, so the kernel enforces its size."""
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user",
            "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL", "--die-with-parent",
            "--new-session", "--clearenv", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    for d in SYSTEM_DIRS:
        argv += ["--ro-bind-try", d, d]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for d in python_dirs() + project_dirs():
        argv += ["--ro-bind", d, d]
    argv += ["--dev", "/dev", "--proc", "/proc", "--size", str(scratch_bytes), "--tmpfs", SCRATCH,
             "--remount-ro", "/", "--chdir", SCRATCH]
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


@functools.cache
def bwrap_works() -> bool:
    """bubblewrap is installed and can create its namespaces here (CI containers may forbid)."""
    if shutil.which("bwrap") is None:
        return False
    try:
        argv = bwrap_argv(TMPFS_BYTES, {}) + [sys.executable, "-c", "pass"]
        return subprocess.run(argv, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def cgroup_works() -> bool:
    """A pids cgroup (v1) we may create children in."""
    parent = CGROUP_PIDS / CGROUP_GROUP
    try:
        parent.mkdir(exist_ok=True)
        probe = parent / f"probe-{uuid.uuid4().hex[:8]}"
        probe.mkdir()
        (probe / "pids.max").write_text("8")
        probe.rmdir()
        return True
    except OSError:
        return False


@dataclass
class LocalProcess(SandboxProcess):
    """A started sandbox process and what must be cleaned up after it."""

    proc: asyncio.subprocess.Process
    scratch: str
    cgroup: Path | None
    protections: dict[str, bool] = field(default_factory=dict)
    limit_hit: str | None = None
    """Why the backend killed the process, when it did (a limit the kernel cannot enforce)."""
    _watch: asyncio.Task | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """Kill the process and everything it started (its cgroup, its session)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.returncode is None:  # not Popen.kill: its poll() reaps behind asyncio's back
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGKILL)
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                for pid in (self.cgroup / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)

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
        if self.cgroup is not None:
            for _ in range(50):
                try:
                    self.cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still exiting
                    self.kill()
                    await asyncio.sleep(0.02)
        shutil.rmtree(self.scratch, ignore_errors=True)


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
    """Subprocess + rlimits (+ bubblewrap, + pids cgroup when available)."""

    def __init__(self, use_bwrap: bool | None = None, use_cgroup: bool | None = None) -> None:
        self.use_bwrap = bwrap_works() if use_bwrap is None else use_bwrap
        self.use_cgroup = cgroup_works() if use_cgroup is None else use_cgroup

    def protections(self) -> dict[str, bool]:
        return {"rlimits": True, "bwrap": self.use_bwrap, "network_isolated": self.use_bwrap,
                "read_only_root": self.use_bwrap, "cgroup_pids": self.use_cgroup,
                "scrubbed_env": True, "docker": False}

    async def spawn(
        self,
        args: list[str],
        limits: Limits,
        env: dict[str, str],
        *,
        pass_fds: tuple[int, ...] = (),
        stdin: int = subprocess.DEVNULL,
    ) -> LocalProcess:
        """Start `python <args>` in a fresh sandbox. `env` is added to the scrubbed base."""
        scratch = tempfile.mkdtemp(prefix="hl-sbx-")
        os.chmod(scratch, 0o777)
        home = SCRATCH if self.use_bwrap else scratch
        env = dict(env)
        if LIMITS_ENV in env:
            settings = json.loads(env[LIMITS_ENV])
            settings["nproc"] = nproc_limit(limits, self.use_cgroup)
            env[LIMITS_ENV] = json.dumps(settings)
        full_env = base_env(home, env)
        argv = [sys.executable, "-s", *args]
        if self.use_bwrap:
            argv = bwrap_argv(limits.scratch_mb << 20, full_env) + argv
        cgroup = None
        if self.use_cgroup:
            cgroup = CGROUP_PIDS / CGROUP_GROUP / f"w-{uuid.uuid4().hex[:12]}"
            cgroup.mkdir(parents=True)
            (cgroup / "pids.max").write_text(str(limits.pids))
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"',
                    str(cgroup / "cgroup.procs"), *argv]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=pass_fds, env=full_env, cwd=scratch, start_new_session=True,
            limit=MAX_MESSAGE_BYTES,
        )
        process = LocalProcess(proc, scratch, cgroup, self.protections())
        if not self.use_bwrap:
            process.watch_scratch(limits.scratch_mb)
        return process
