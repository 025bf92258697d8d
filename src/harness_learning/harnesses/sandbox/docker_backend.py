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

What Docker does not give: one cgroup per candidate. Each `tools.python` call is its own
container with its own limits (`Limits.for_python`), not a share of its candidate's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import struct
import sys
import threading
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from harness_learning.harnesses.sandbox import seccomp
from harness_learning.harnesses.sandbox.backend import (
    SandboxBackend,
    SandboxProcess,
    sandbox_backend,
)
from harness_learning.harnesses.sandbox.cgroups import Usage
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.local import (
    ETC_FILES,
    SCRATCH,
    SYSTEM_DIRS,
    TMPFS_BYTES,
    base_env,
    view_mounts,
)
from harness_learning.harnesses.sandbox.protocol import MAX_MESSAGE_BYTES

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
                     python: str | None = None) -> dict[str, Any]:
    """Keyword arguments of `client.containers.create` for one sandbox process: `python -s
    <args>` (this machine's interpreter) under the protections above."""
    binds, hidden = filesystem_binds()
    return {
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
        "auto_remove": False,
    }


class Demux:
    """Split Docker's multiplexed attach stream into stdout and stderr payloads."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= 8:
            stream, length = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + length:
                break
            frames.append((stream, bytes(self.buffer[8:8 + length])))
            del self.buffer[:8 + length]
        return frames


@dataclass
class _Proc:
    """The parts of `asyncio.subprocess.Process` the sandbox client uses."""

    container: Any
    stdin: Any
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    returncode: int | None = None
    pid: int = 0

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill()

    async def wait(self) -> int:
        result = await asyncio.to_thread(self.container.wait)
        self.returncode = int(result.get("StatusCode", -1))
        return self.returncode


@dataclass
class DockerProcess(SandboxProcess):
    proc: _Proc
    protections: dict[str, bool] = field(default_factory=dict)
    limit_hit: str | None = None

    @property
    def pid(self) -> int:
        return 0

    def kill(self) -> None:
        self.proc.kill()

    def usage(self) -> Usage:
        """The container's cgroup as the engine reports it: whether its OOM killer ended the
        container (asked only once it has exited; blocking, so call it in a thread)."""
        if self.proc.returncode is None:
            return Usage()
        try:
            self.proc.container.reload()
            killed = bool(self.proc.container.attrs.get("State", {}).get("OOMKilled"))
        except Exception:
            return Usage()
        return Usage(oom_kills=int(killed))

    async def cleanup(self) -> None:
        self.kill()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.proc.container.remove, force=True)


@sandbox_backend("docker")
class DockerBackend(SandboxBackend):
    """Containers instead of local processes. The worker's bridge runs over stdin/stdout."""

    stdio_bridge = True

    @classmethod
    def available(cls) -> bool:
        return docker_available()

    def __init__(self, image: str = DEFAULT_IMAGE, client: Any = None) -> None:
        self.image = image
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import docker

            self._client = docker.from_env()
        return self._client

    def protections(self) -> dict[str, bool]:
        return {"rlimits": True, "bwrap": False, "network_isolated": True, "read_only_root": True,
                "import_allowlist": True, "seccomp": True, "userns_disabled": True,
                "shm_bounded": True, "cgroup_pids": True, "cgroup_memory": True,
                "cgroup_cpu": True, "scrubbed_env": True, "docker": True}

    async def spawn(self, args: list[str], limits: Limits, env: dict[str, str], *,
                    pass_fds: tuple[int, ...] = (), stdin: Any = None) -> DockerProcess:
        config = container_config(args, limits, env, self.image)
        container = await asyncio.to_thread(self.client.containers.create, **config)
        sock = await asyncio.to_thread(
            container.attach_socket, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        await asyncio.to_thread(container.start)
        loop = asyncio.get_running_loop()
        out, err = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES), asyncio.StreamReader()
        raw = getattr(sock, "_sock", sock)
        threading.Thread(target=_pump, args=(raw, out, err, loop), daemon=True).start()
        proc = _Proc(container, _SocketWriter(raw), out, err)
        return DockerProcess(proc, self.protections())


class _SocketWriter:
    """A minimal stream writer over the attach socket (the worker's stdin)."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock

    @property
    def transport(self) -> _SocketWriter:
        """The client asks its writer's transport how much is buffered; `write` sends all of
        it at once, so nothing ever is."""
        return self

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(1)


def _pump(sock: Any, out: asyncio.StreamReader, err: asyncio.StreamReader,
          loop: asyncio.AbstractEventLoop) -> None:
    demux = Demux()
    while data := sock.recv(65536):
        for stream, payload in demux.feed(data):
            target = out if stream == 1 else err
            loop.call_soon_threadsafe(target.feed_data, payload)
    loop.call_soon_threadsafe(out.feed_eof)
    loop.call_soon_threadsafe(err.feed_eof)
