"""Docker backend: container settings (unit) and a live run where an engine answers."""

from __future__ import annotations

import asyncio
import struct

import pytest
from harness_learning.harnesses.sandbox import Limits, Worker
from harness_learning.harnesses.sandbox.docker_backend import (
    Demux,
    DockerBackend,
    container_config,
    docker_available,
)
from harness_learning.harnesses.seeds import seed_source

from .conftest import ScriptedToolbox


def test_container_has_no_network_no_writable_root_and_limits(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_API_KEY", "sk-planted")
    limits = Limits(memory_mb=512, pids=20, cpu_s=30, file_size_mb=8, scratch_mb=48)
    config = container_config(["-m", "harness_learning.harnesses.sandbox.worker"], limits,
                              {"HARNESS_BRIDGE_FD": "stdio"}, "img")
    assert config["network_mode"] == "none" and config["network_disabled"] is True
    assert config["read_only"] is True and config["cap_drop"] == ["ALL"]
    assert config["mem_limit"] == "512m" and config["pids_limit"] == 20
    assert config["user"] == "65534:65534" and "no-new-privileges" in config["security_opt"]
    assert {"name": "cpu", "soft": 30, "hard": 35} in config["ulimits"]
    assert config["tmpfs"]["/scratch"].startswith("size=48m,")
    assert all(m["mode"] == "ro" for m in config["volumes"].values())
    assert config["command"][-2:] == ["-m", "harness_learning.harnesses.sandbox.worker"]
    assert config["environment"]["HARNESS_BRIDGE_FD"] == "stdio"
    assert "sk-planted" not in config["environment"].values()


def test_demux_splits_frames_across_reads():
    frames = (struct.pack(">BxxxI", 1, 5) + b"hello" + struct.pack(">BxxxI", 2, 3) + b"err")
    demux = Demux()
    got = demux.feed(frames[:7]) + demux.feed(frames[7:12]) + demux.feed(frames[12:])
    assert got == [(1, b"hello"), (2, b"err")]


def test_live_docker_worker():
    if not docker_available():
        pytest.skip("no Docker engine with the sandbox image answers here")

    async def go():
        async with Worker(ScriptedToolbox(), backend=DockerBackend()) as worker:
            await worker.load(seed_source("reasoning_direct"))
            return await worker.run("p", {"question": "q"})

    assert asyncio.run(go()).answer == "4"
