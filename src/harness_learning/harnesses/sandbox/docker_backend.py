"""The Docker backend: the same worker protocol in a container, with the local backend's
protections: no network, a read-only root, the same filesystem view (`view.view_mounts`: the
interpreter, the project's layers and only the allowlisted packages, read-only; never the whole
site-packages), the same seccomp lists (`seccomp.docker_profile`), a bounded /dev/shm, and
memory, pids and CPU limits from the same `Limits`. Chosen when a Docker engine answers.

The container runs this machine's interpreter from the bound view, so the image contributes
only an empty userland under the binds: what it has installed is never importable. Top-level
directories that the binds sit under, other than the system ones (the virtualenv's /work, a
pyenv under /root), are root-owned empty tmpfs mounts, so the image's content there is hidden
and the sandbox user can walk down to the binds but write nothing. Every mount, tmpfs ones
included, is listed in the order it is made (`mount_list`: parents first), so a clone under /tmp
keeps its read-only binds over the container's writable /tmp.

The container cannot inherit a socket, so the worker speaks the bridge over its stdin and
stdout (`HARNESS_BRIDGE_FD=stdio`: it keeps private copies of fds 0/1 and points fd 1 at
stderr, so harness prints cannot corrupt the bridge). The attach socket multiplexes stdout and
stderr in frames (8-byte header: stream, 0, 0, 0, big-endian length), which `Demux` splits.

The engine keeps no log of a container (`log_driver: none`: what the worker writes reaches the
parent only through the attach socket, read with the local backend's bounds: the bridge's line
limit, `Limits.bridge_line_bytes`, and the capped stdout/stderr buffers), removes it when it
exits, and labels it with the parent's pid, so the containers of a parent killed outright are
swept at the next start (`docker_care`). Where the engine nests containers under a cgroup path
(cgroupfs driver, cgroup v1), each candidate gets one cgroup holding its limits, with its
`tools.python` containers in child groups, as on the local backend; elsewhere each container
has its own limits only, and `protections()` says so (`cgroup_per_candidate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.sandbox import docker_care, seccomp
from harness_learning.harnesses.sandbox.backend import (
    SandboxBackend,
    SandboxProcess,
    file_work,
    in_thread,
    sandbox_backend,
)
from harness_learning.harnesses.sandbox.cgroups import CANDIDATE_GROUP, Group, Spec, Usage
from harness_learning.harnesses.sandbox.docker_stream import (  # noqa: F401  (Demux: its tests)
    Demux,
    SocketWriter,
    exit_waiter,
    pump,
)
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.local import (
    ETC_FILES,
    SCRATCH,
    SYSTEM_DIRS,
    TMPFS_BYTES,
    base_env,
    view_mounts,
)

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

logger = logging.getLogger(__name__)

DEFAULT_IMAGE = "harness-learning-sandbox:latest"
"""The skeleton that `harness-learn sandbox build-image` imports (`image.py`; any small Linux
image tagged so works too): it gives the container a root filesystem; the interpreter and every
package come from the bound view."""
SANDBOX_USER = "65534:65534"
WALK_ONLY = (64 << 10, 0o755, False)
"""A root-owned empty tmpfs (size, mode, read-only): the sandbox user may walk through it, not
write to it."""
EMPTY = (16 << 10, 0o755, True)
"""An empty read-only tmpfs: hides a package directory of the image or the host."""
WRITABLE_MODE = 0o1777
"""/tmp and the scratch directory: the only places the sandbox user may write."""


@functools.cache
def docker_available(image: str = DEFAULT_IMAGE) -> bool:
    """An engine answers and holds the sandbox image."""
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
        client.images.get(image)
        return True
    except Exception:
        return False


def filesystem_binds() -> tuple[list[tuple[str, str]], list[str]]:
    """(read-only binds (host path, container path) in mount order, paths emptied by a tmpfs):
    the system directories and /etc files the local backend binds (symlinked ones by their
    target, so the host's loader and libraries are the ones found), then `view_mounts`."""
    binds: list[tuple[str, str]] = []
    for path in [*SYSTEM_DIRS, *(f"/etc/{name}" for name in ETC_FILES)]:
        if os.path.exists(path):
            binds.append((os.path.realpath(path), path))
    hidden = []
    for source, target in view_mounts():
        if source is None:
            hidden.append(target)
        else:
            binds.append((source, target))
    return binds, hidden


def walk_only_roots(targets: list[str]) -> list[str]:
    """The top-level directories of `targets` that are not system directories, /etc, /tmp or
    the scratch directory: each becomes a `WALK_ONLY` tmpfs."""
    covered = {*SYSTEM_DIRS, "/etc", "/tmp", SCRATCH, "/dev", "/proc"}
    roots = {"/" + PurePosixPath(t).parts[1] for t in targets if len(PurePosixPath(t).parts) > 1}
    return sorted(roots - covered)


def tmpfs_mounts(hidden: list[str], binds: list[tuple[str, str]],
                 limits: Limits) -> list[tuple[str, tuple[int, int, bool]]]:
    """(target, (size, mode, read-only)) of every tmpfs: the walk-only roots above the binds,
    the writable /tmp and scratch directory, the emptied package directories."""
    mounts = [(root, WALK_ONLY) for root in walk_only_roots([t for _, t in binds])]
    mounts += [(d, EMPTY) for d in hidden]
    mounts += [(SCRATCH, (limits.scratch_mb << 20, WRITABLE_MODE, False)),
               ("/tmp", (TMPFS_BYTES, WRITABLE_MODE, False))]
    return mounts


def mount_list(binds: list[tuple[str, str]], tmpfs: list[tuple[str, tuple[int, int, bool]]],
               ) -> list[Any]:
    """Every mount in the order it must be made: parents before what lies under them (a
    virtualenv under /tmp is bound after the writable /tmp tmpfs, so it stays there and
    read-only), a tmpfs before a bind at the same depth. Docker itself mounts in order of
    depth, so this is the order it applies; the spec states it rather than relying on it."""
    from docker.types import Mount

    entries = [(t, 0, Mount(t, None, type="tmpfs", tmpfs_size=size, tmpfs_mode=mode,
                            read_only=ro)) for t, (size, mode, ro) in tmpfs]
    entries += [(t, 1, Mount(t, s, type="bind", read_only=True)) for s, t in binds]
    return [m for _, _, m in sorted(entries, key=lambda e: (len(PurePosixPath(e[0]).parts),
                                                            e[1]))]


def container_config(args: list[str], limits: Limits, env: dict[str, str], image: str,
                     python: str | None = None, cgroup_parent: str | None = None,
                     ) -> dict[str, Any]:
    """Keyword arguments of `client.containers.create` for one sandbox process: `python -s
    <args>` (this machine's interpreter) under the protections above. File work (the binds
    are resolved on disk): call it in a thread from an event loop. With `cgroup_parent` (a
    group of ours holding the limits) the container sets no memory, pids or CPU limit of its
    own: the group's counters then name the limit that ended it, and outlive it."""
    binds, hidden = filesystem_binds()
    config = {
        "image": image,
        "command": [python or sys.executable, "-s", *args],
        "environment": base_env(SCRATCH, env),
        "working_dir": SCRATCH,
        "user": SANDBOX_USER,
        "network_mode": "none",
        "network_disabled": True,
        "ipc_mode": "private",
        "read_only": True,
        "privileged": False,
        "mounts": mount_list(binds, tmpfs_mounts(hidden, binds, limits)),
        "shm_size": limits.shm_mb << 20,
        "mem_limit": limits.memory_mb << 20,
        "memswap_limit": limits.memory_mb << 20,
        "nano_cpus": int(limits.cpu_cores * 1e9),
        "pids_limit": limits.pids,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", seccomp.docker_security_opt()],
        "ulimits": [{"name": "cpu", "soft": limits.cpu_s, "hard": limits.cpu_s + 5},
                    {"name": "fsize", "soft": limits.file_size_mb << 20,
                     "hard": limits.file_size_mb << 20}],
        "stdin_open": True,
        # Not detached: docker-py then sets StdinOnce, so the engine closes the container's
        # stdin when ours is closed. Without it tools.python's program, read from stdin up to
        # its end, waited for an EOF that never came and every call timed out.
        "tty": False,
        "detach": False,
        "auto_remove": True,
        # No log of the container's output: the parent reads it, bounded, from the attach
        # socket, while a json-file log grew with all of it on the host's disk.
        "log_config": {"type": "none", "config": {}},
        "labels": docker_care.labels(os.getpid()),
    }
    if cgroup_parent is not None:
        config["cgroup_parent"] = cgroup_parent
        for key in ("mem_limit", "memswap_limit", "nano_cpus", "pids_limit"):
            del config[key]
    return config


@dataclass
class _Proc:
    """The parts of `asyncio.subprocess.Process` the sandbox client uses. The exit is awaited
    from before the container starts (`waiter`): the engine removes it once it exits."""

    container: Container
    stdin: SocketWriter | None
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    returncode: int | None = None
    pid: int = 0
    waiter: asyncio.Future | None = None

    def kill(self) -> None:
        """Ask the engine to kill the container: an HTTP call, so in a thread on a loop."""
        file_work(self._kill)

    def _kill(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill()

    async def wait(self) -> int:
        if self.returncode is not None:
            return self.returncode
        try:
            result = await (self.waiter if self.waiter is not None
                            else asyncio.to_thread(self.container.wait))
            self.returncode = int(result.get("StatusCode", -1))
        except Exception:  # removed before a wait was registered: the code is unknown
            self.returncode = -1
        return self.returncode


@dataclass
class DockerProcess(SandboxProcess):
    proc: _Proc
    protections: dict[str, bool] = field(default_factory=dict)
    limit_hit: str | None = None
    group: Group | None = None
    """The candidate's cgroup (or a `tools.python` call's child of it) the container is in."""

    @property
    def pid(self) -> int:
        return 0

    def kill(self) -> None:
        self.proc.kill()
        if self.group is not None:
            file_work(self.group.kill)

    def usage(self) -> Usage:
        """What the group counted (as on the local backend) and the container's own cgroup in
        it (while it runs: the kernel counts a refused fork there), and whether the engine saw
        its OOM killer end the container (while the engine still holds it). Blocking: call it
        in a thread."""
        counted = Usage()
        if self.group is not None:  # a refused fork counts in the forking task's own cgroup:
            leaves = [d / str(getattr(self.proc.container, "id", "")) for d in self.group.dirs]
            counted = Group([*self.group.dirs, *leaves], self.group.version).usage()
        if self.proc.returncode is None:
            return counted
        try:
            self.proc.container.reload()
            killed = bool(self.proc.container.attrs.get("State", {}).get("OOMKilled"))
        except Exception:
            return counted
        return replace(counted, oom_kills=max(counted.oom_kills, int(killed)))

    async def cleanup(self) -> None:
        self.kill()
        with contextlib.suppress(Exception):
            await in_thread(functools.partial(self.proc.container.remove, force=True))
        if self.proc.waiter is not None:
            with contextlib.suppress(Exception, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.waiter), 5)
        if self.group is not None:
            for _ in range(100):
                if await in_thread(docker_care.remove_group, self.group):
                    break
                self.kill()
                await asyncio.sleep(0.05)


@sandbox_backend("docker")
class DockerBackend(SandboxBackend):
    """Containers instead of local processes. The worker's bridge runs over stdin/stdout."""

    stdio_bridge = True

    @classmethod
    def available(cls) -> bool:
        return docker_available()

    def __init__(self, image: str = DEFAULT_IMAGE, client: DockerClient | None = None,
                 use_cgroup: bool | None = None) -> None:
        self.image = image
        self._client = client
        self._use_cgroup = use_cgroup

    @property
    def client(self) -> Any:
        """The engine's client (blocking to make: call from a thread on an event loop)."""
        if self._client is None:
            import docker

            self._client = docker.from_env()
        return self._client

    @functools.cached_property
    def cgroups(self) -> Any:
        """Where candidate groups are made, or None where the engine cannot nest containers
        under them (asks the engine: blocking)."""
        if self._use_cgroup is False:
            return None
        try:
            return docker_care.engine_cgroups(self.client)
        except Exception:
            return None

    def protections(self) -> dict[str, bool]:
        """What is applied here. Blocking the first time (asks the engine about cgroups)."""
        per_candidate = self.cgroups is not None
        return {"rlimits": True, "bwrap": False, "network_isolated": True, "read_only_root": True,
                "import_allowlist": True, "seccomp": True, "userns_disabled": True,
                "shm_bounded": True, "cgroup_pids": True, "cgroup_memory": True,
                "cgroup_cpu": True, "cgroup_per_candidate": per_candidate,
                "scrubbed_env": True, "bounded_logs": True,
                "line_limit": True, "auto_remove": True, "orphan_sweep": True, "docker": True}

    def _group(self, limits: Limits, within: Group | None) -> Group | None:
        """The container's cgroup: a child of `within` (a `tools.python` call's candidate),
        else a new candidate group; None where the engine cannot nest under one."""
        if self.cgroups is None:
            return None
        spec = Spec(limits.memory_mb << 20, limits.pids, limits.cpu_cores)
        return within.child(spec) if within is not None else self.cgroups.make(spec)

    def _create(self, args: list[str], limits: Limits, env: dict[str, str],
                within: Group | None) -> tuple[Any, Group | None]:
        """(container, its group), created but not started. Blocking: engine calls and file
        work (the binds resolved on disk, cgroup files), so it runs in a thread."""
        docker_care.sweep_once(self.client)
        group = self._group(limits, within)
        parent = docker_care.parent_path(group) if group is not None else None
        try:
            config = container_config(args, limits, env, self.image, cgroup_parent=parent)
            return self.client.containers.create(**config), group
        except BaseException:
            if group is not None:
                docker_care.remove_group(group)
            raise

    async def spawn(self, args: list[str], limits: Limits, env: dict[str, str], *,
                    pass_fds: tuple[int, ...] = (), stdin: int | None = None,
                    within: Group | None = None) -> DockerProcess:
        """Start `python <args>` in a fresh container; `within` (default: the candidate whose
        tool call this is) puts it in that candidate's cgroup. Nothing here blocks the event
        loop: every engine call and file access runs in a thread."""
        group_in = within if within is not None else CANDIDATE_GROUP.get()
        container, group = await asyncio.to_thread(self._create, args, limits, env, group_in)
        try:
            sock = await asyncio.to_thread(
                container.attach_socket,
                params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            waiter = exit_waiter(container)
            await asyncio.to_thread(container.start)
        except BaseException:
            await DockerProcess(_Proc(container, None, None, None), group=group).cleanup()
            raise
        loop = asyncio.get_running_loop()
        out = asyncio.StreamReader(limit=limits.bridge_line_bytes)
        err = asyncio.StreamReader()
        raw = getattr(sock, "_sock", sock)
        threading.Thread(target=pump, args=(raw, out, err, loop, limits.bridge_line_bytes),
                         daemon=True).start()
        proc = _Proc(container, SocketWriter(raw), out, err, waiter=waiter)
        process = DockerProcess(proc, self.protections(), group=group)
        if group is not None and not await asyncio.to_thread(docker_care.nested, group,
                                                             container.id):
            logger.warning("the engine did not nest container %s in its candidate cgroup; "
                           "its own limits only", container.id[:12])
        return process
