"""The Docker backend's housekeeping: no container log, containers labelled with their parent,
auto-removed and swept when their parent is gone, one cgroup per candidate where the engine
nests containers, and the attach stream read and written off the event loop with the bridge's
line bound. Spec checks need no engine; the live ones run where an engine holds the image."""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct

import pytest
from docker_engine import require_engine

from harness_learning.harnesses.sandbox import Limits
from harness_learning.harnesses.sandbox.docker_backend import DockerBackend, container_config

WORKER = ["-m", "harness_learning.harnesses.sandbox.worker"]


def spec(limits: Limits | None = None) -> dict:
    return container_config(WORKER, limits or Limits(), {"HARNESS_BRIDGE_FD": "stdio"}, "img")


def test_containers_keep_no_log_are_removed_and_name_their_parent():
    config = spec()
    assert config["log_config"] == {"type": "none", "config": {}}
    assert config["auto_remove"] is True
    assert config["labels"]["harness-learning.parent"] == str(os.getpid())
    assert "cgroup_parent" not in config


def test_in_a_candidate_cgroup_the_group_holds_the_limits():
    """Nested under the candidate's group, the container sets no memory, pids or CPU limit of
    its own: the kernel then counts at the group, whose counters outlive the container."""
    config = container_config(WORKER, Limits(), {}, "img", cgroup_parent="/harness-learning/w-1")
    assert config["cgroup_parent"] == "/harness-learning/w-1"
    assert not {"mem_limit", "memswap_limit", "pids_limit", "nano_cpus"} & set(config)


def test_the_sweep_takes_only_containers_of_dead_parents_of_this_host():
    import socket

    from harness_learning.harnesses.sandbox.docker_care import orphaned

    dead = 2 ** 22 + 12345  # above pid_max's default: no such process
    host = socket.gethostname()
    assert orphaned({"harness-learning.parent": str(dead), "harness-learning.host": host})
    assert not orphaned({"harness-learning.parent": str(os.getpid()), "harness-learning.host": host})
    assert not orphaned({"harness-learning.parent": str(dead), "harness-learning.host": "other"})
    assert not orphaned({"harness-learning.parent": "x1", "harness-learning.host": host})


def test_the_attach_socket_writer_sends_from_a_thread_of_its_own():
    """The attach socket blocks: `write` only queues (the event loop never waits on the engine),
    a thread sends in order, and `close` shuts the socket's sending side after the rest."""
    import threading

    from harness_learning.harnesses.sandbox.docker_stream import SocketWriter

    sent: list[bytes] = []
    closed = threading.Event()
    sock = type("Sock", (), {"sendall": lambda self, data: sent.append(data),
                             "shutdown": lambda self, how: closed.set()})()
    writer = SocketWriter(sock)
    writer.write(b"line\n")
    writer.write(b"more\n")
    writer.close()
    assert closed.wait(5) and sent == [b"line\n", b"more\n"]
    assert writer.transport.get_write_buffer_size() == 0


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def test_the_stdout_reader_stops_at_the_bridge_line_limit():
    """Past one stdout line of `line_bytes` the pump feeds nothing more (the reader has what it
    needs to fail), while stderr still flows: an endless line never piles up in the parent."""
    from harness_learning.harnesses.sandbox.docker_stream import pump

    chunk = b"a" * 60_000
    stream = frame(1, b'{"op": "ready"}\n') + b"".join(frame(1, chunk) for _ in range(40))
    stream += frame(2, b"note")

    class Sock:
        def __init__(self) -> None:
            self.data = stream

        def recv(self, n: int) -> bytes:
            out, self.data = self.data[:n], self.data[n:]
            return out

    async def go() -> tuple[bytes, int, bytes]:
        out, err = asyncio.StreamReader(limit=100_000), asyncio.StreamReader()
        await asyncio.to_thread(pump, Sock(), out, err, asyncio.get_running_loop(), 100_000)
        await asyncio.sleep(0.05)
        first = await out.readline()
        held = len(out._buffer)
        with pytest.raises(ValueError):
            await out.readline()
        return first, held, await err.read()

    first, held, note = asyncio.run(go())
    assert first == b'{"op": "ready"}\n' and note == b"note"
    assert held <= 100_000 + len(chunk)  # of 2.4 MB written: one chunk past the limit at most


def test_live_container_keeps_no_log_sits_in_its_candidates_cgroup_and_leaves_nothing():
    require_engine()
    import docker.errors

    from harness_learning.harnesses.sandbox import docker_care

    backend = DockerBackend()

    async def go():
        process = await backend.spawn(["-c", "import time; time.sleep(60)"], Limits(), {})
        container = process.proc.container
        try:
            await asyncio.to_thread(container.reload)
            nested = process.group is not None and docker_care.nested(process.group, container.id)
        finally:
            await process.cleanup()
        return process, container, nested

    process, container, nested = asyncio.run(go())
    host = container.attrs["HostConfig"]
    assert host["LogConfig"]["Type"] == "none" and host["AutoRemove"] is True
    assert container.attrs["Config"]["Labels"]["harness-learning.parent"] == str(os.getpid())
    with pytest.raises(docker.errors.NotFound):
        backend.client.containers.get(container.id)
    if backend.protections()["cgroup_per_candidate"]:  # cgroupfs on v1, as here
        assert host["CgroupParent"] == docker_care.parent_path(process.group) and nested
        assert not any(d.exists() for d in process.group.dirs)


def test_live_sweep_removes_only_the_containers_of_dead_parents():
    require_engine()
    import docker.errors

    from harness_learning.harnesses.sandbox import docker_care
    from harness_learning.harnesses.sandbox.docker_backend import DEFAULT_IMAGE

    client = DockerBackend().client
    config = container_config(["-c", "pass"], Limits(), {}, DEFAULT_IMAGE)
    dead = {**config, "labels": {**config["labels"], docker_care.PARENT_LABEL: str(2 ** 22 + 7)}}
    orphan, ours = client.containers.create(**dead), client.containers.create(**config)
    try:
        removed = docker_care.sweep_orphans(client)
        assert orphan.id in removed and ours.id not in removed
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(orphan.id)
        assert client.containers.get(ours.id).status == "created"
    finally:
        for container in (orphan, ours):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
