"""A second connection writing to a new SQLite file for a while, as a second process creating
the same new file does. SQLite refuses the switch to WAL mode at once while another connection
holds the write lock of a rollback journal (waiting could deadlock), whatever the busy timeout."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


def hold_a_write_lock(path: Path, seconds: float) -> threading.Timer:
    """Open `path` in its default rollback journal, take the write lock (BEGIN IMMEDIATE) and
    commit after `seconds`; join the returned timer to wait for the release."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("CREATE TABLE IF NOT EXISTS other (x)")
    release = threading.Timer(seconds, lambda: (conn.execute("COMMIT"), conn.close()))
    release.start()
    return release
