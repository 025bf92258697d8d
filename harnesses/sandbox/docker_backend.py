"""The Docker backend: the same worker protocol in a container with no network, a read-only
root, and memory, CPU and pids limits. Chosen when a Docker engine answers.

The container cannot inherit a socket, so the worker speaks the bridge over its stdin and
stdout (`HARNESS_BRIDGE_FD=stdio`: it keeps private copies of fds 0/1 and points fd 1 at
stderr, so harness prints cannot corrupt the bridge). The attach socket multiplexes stdout and
stderr in frames (8-byte header: stream, 0, 0, 0, big-endian length), which `Demux` splits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from harness_learning.harnesses.sandbox.backend import (
    SandboxBackend,
    SandboxProcess,
    sandbox_backend,
)
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.local import SCRATCH, base_env, project_dirs
from harness_learning.harnesses.sandbox.protocol import MAX_MESSAGE_BYTES

DEFAULT_IMAGE = "harness-learning-sandbox:latest"
"""An image with this project's dependencies installed (the project's packages are mounted)."""


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


def container_config(args: list[str], limits: Limits, env: dict[str, str], image: str,
                     python: str = "python") -> dict[str, Any]:
    """Keyword arguments of `client.containers.create` for one sandbox process."""
    mounts = {d: {"bind": d, "mode": "ro"} for d in project_dirs()}
    return {
        "image": image,
        "command": [python, "-s", *args],
        "environment": base_env(SCRATCH, env),
        "working_dir": SCRATCH,
        "user": "65534:65534",
        "network_mode": "none",
        "network_disabled": True,
        "read_only": True,
        "tmpfs": {SCRATCH: f"size={limits.scratch_mb}m,mode=1777", "/tmp": "size=64m,mode=1777"},
        "volumes": mounts,
        "mem_limit": f"{limits.memory_mb}m",
        "memswap_limit": f"{limits.memory_mb}m",
        "nano_cpus": 1_000_000_000,
        "pids_limit": limits.pids,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "ulimits": [{"name": "cpu", "soft": limits.cpu_s, "hard": limits.cpu_s + 5},
                    {"name": "fsize", "soft": limits.file_size_mb << 20,
                     "hard": limits.file_size_mb << 20}],
        "stdin_open": True,
        "tty": False,
        "detach": True,
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
                "cgroup_pids": True, "scrubbed_env": True, "docker": True}

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
