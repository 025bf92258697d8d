"""A finished run's log read from a read-only filesystem (an archived run on a mount, a folder
of shared data): SQLite cannot make the `-shm` index a WAL-mode file wants there."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

import pytest

from harness_learning.harnesses.store import LogStoreError, SQLiteLogStore


@contextlib.contextmanager
def read_only_mount(folder: Path, at: Path):
    """`folder` seen at `at` through a read-only bind mount (root only: skipped elsewhere)."""
    at.mkdir()
    steps = (["mount", "--bind", str(folder), str(at)],
             ["mount", "-o", "remount,ro,bind", str(at)])
    for no, step in enumerate(steps):
        if subprocess.run(step, capture_output=True).returncode != 0:
            if no:
                subprocess.run(["umount", str(at)], check=True)
            pytest.skip("a read-only bind mount needs root")
    try:
        yield at
    finally:
        subprocess.run(["umount", str(at)], check=True)


def test_a_finished_log_on_a_read_only_filesystem_is_read(tmp_path):
    """An archived run on a read-only mount has no `-shm` index and cannot make one: the log
    is read as immutable, and one whose write-ahead log was never merged is refused in a line."""
    with SQLiteLogStore(tmp_path / "run") as writer:
        writer.append_event("tick", {"i": 0})
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["log.sqlite"]
    with (read_only_mount(tmp_path / "run", tmp_path / "ro") as ro,
          SQLiteLogStore(ro, read_only=True) as reader):
        assert [e.payload["i"] for e in reader.iter_events()] == [0]

    writer = SQLiteLogStore(tmp_path / "live")
    writer.append_event("tick", {"i": 1})  # committed to the write-ahead log, not yet merged
    (tmp_path / "copy").mkdir()
    for name in ("log.sqlite", "log.sqlite-wal"):  # a copy taken while it ran, without -shm
        shutil.copy(tmp_path / "live" / name, tmp_path / "copy" / name)
    writer.close()
    with (read_only_mount(tmp_path / "copy", tmp_path / "ro2") as ro,
          pytest.raises(LogStoreError, match="unmerged write-ahead log") as raised):
        SQLiteLogStore(ro, read_only=True)
    assert "\n" not in str(raised.value)
