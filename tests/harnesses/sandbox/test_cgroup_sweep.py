"""Candidate cgroups a killed parent left behind are swept when the next process starts using
the hierarchy (harnesses/sandbox/cgroups.py): the dead owner's group is removed and its
member killed, while the groups of live owners (another run, this process) are untouched,
member and all, even an empty one."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from harness_learning.harnesses.sandbox.cgroups import Cgroups, Spec

CGROUPS = Cgroups.probe()
pytestmark = pytest.mark.skipif(CGROUPS is None, reason="no writable cgroup hierarchy here")

OWNER = """
import subprocess, sys, time
from harness_learning.harnesses.sandbox.cgroups import Cgroups, Spec
group = Cgroups.probe().make(Spec(64 << 20, 8))
member = subprocess.Popen(["sleep", "600"])
for procs in group.procs:
    with open(procs, "w") as f:
        f.write(str(member.pid))
print(group.dirs[0].name, member.pid, flush=True)
time.sleep(600)
"""


def start_owner() -> tuple[subprocess.Popen, str, int]:
    """A parent holding one candidate group with a `sleep` member: (process, group, member)."""
    proc = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
    name, member = proc.stdout.readline().split()
    return proc, name, int(member)


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def exists(name: str) -> list[bool]:
    return [(base / name).is_dir() for base in CGROUPS.bases]


def test_a_dead_parents_group_is_swept_at_the_next_start_and_live_ones_are_kept():
    dead, dead_group, dead_member = start_owner()
    live, live_group, live_member = start_owner()
    own = CGROUPS.make(Spec(64 << 20, 8))  # this process's: alive, and empty
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        assert all(exists(dead_group)) and running(dead_member), "nothing was left behind"
        started = subprocess.run(
            [sys.executable, "-c", "from harness_learning.harnesses.sandbox.cgroups import "
             "Cgroups; print(Cgroups.probe() is not None)"],
            capture_output=True, text=True, timeout=60)
        assert started.stdout.strip() == "True", started.stderr[-2000:]
        deadline = time.monotonic() + 10
        while running(dead_member) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(exists(dead_group)) and not running(dead_member)
        assert all(exists(live_group)) and running(live_member), "a live run's group was touched"
        assert all(d.is_dir() for d in own.dirs), "this process's empty group was removed"
    finally:
        live.kill()
        live.wait()
        for pid in (live_member, dead_member):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        own.remove()
    assert live_group in CGROUPS.sweep()  # its owner is gone now: swept here too
