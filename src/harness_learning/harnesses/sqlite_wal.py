"""Switching a SQLite connection to WAL mode when other processes may be opening the same file.

`PRAGMA journal_mode=WAL` needs the database's exclusive lock. While another connection holds a
rollback journal's write lock, SQLite answers "database is locked" at once (waiting could
deadlock), whatever the connection's busy timeout; a reader's lock is waited for as usual. Several processes opening one new file together (the Ray
workers of one benchmark grid sharing a response cache) therefore failed now and then on their
first statement. Once a file is in WAL mode the pragma changes nothing and takes no lock, so
retrying it until the busy timeout runs out is enough.

Writers sharing such a file take its write lock before they read (`write_transaction`), so two
processes merging into the same rows cannot both read the old value.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RETRY_SLEEP_S = 0.02


def enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Put `conn`'s database in WAL mode, retrying a locked database for up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(RETRY_SLEEP_S)


def connect_read_only(path: Path, **kwargs: Any) -> sqlite3.Connection:
    """A connection that only reads `path`, also where nothing may be written beside it.

    A WAL-mode file opened read-only needs its `-shm` index, which SQLite creates if it is
    missing; on a read-only filesystem (an archived run on a mount, a folder of shared data) it
    cannot, and every read fails with "unable to open database file". A file with no write-ahead
    log holds every committed write, so it is then opened as immutable: no index, no locks.
    With a log left beside it (its writer stopped before a checkpoint) that would silently drop
    the log's writes, so it is refused in one line instead."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, **kwargs)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.DatabaseError as exc:
        conn.close()
        if not isinstance(exc, sqlite3.OperationalError) or os.access(path.parent, os.W_OK):
            raise
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise sqlite3.OperationalError(
            f"{path} is on a read-only filesystem with an unmerged write-ahead log ({wal.name}) "
            "and no index for it: copy its folder somewhere writable to read it")
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, **kwargs)


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction holding the database's write lock from its first statement
    (`BEGIN IMMEDIATE`); committed when the block ends, rolled back if it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
