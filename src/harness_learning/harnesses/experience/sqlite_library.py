"""The experience library in a directory: one SQLite file, `library.sqlite`.

Why SQLite, not JSON files with a lock: a merge is one transaction (`BEGIN IMMEDIATE` takes the
write lock before the merge reads, so of two runs finishing at once neither loses outcomes),
atomic on disk and across processes with no lock file to leave behind when a run is killed;
the project keeps its run logs the same way. A file that is no SQLite database, or one holding
other tables, is refused in one line and left as it was.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from harness_learning.harnesses.experience.entry import SCHEMA_VERSION
from harness_learning.harnesses.experience.library import (
    BACKENDS,
    FILE,
    TIMEOUT_S,
    Library,
    LibraryError,
    check_location,
    newer_schema,
    no_library,
)
from harness_learning.harnesses.sqlite_wal import enable_wal, write_transaction

if TYPE_CHECKING:
    from harness_learning.harnesses.store.schema import Cursor

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, body TEXT NOT NULL, "
    "updated_at REAL NOT NULL)",
)


class SQLiteLibrary(Library):
    """The library in directory `path` (created on first use unless `create` is False)."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(check_location(str(path)))
        self.location = str(self.path)
        self.file = self.path / FILE
        self.skipped: list[str] = []
        if self.path.exists() and not self.path.is_dir():
            raise LibraryError(f"{self.path} is a file; an experience library is a directory "
                               "or a postgresql:// URL: give a directory path")
        if not self.file.exists() and not create:
            raise no_library(str(self.path), f" ({FILE} not found)")
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.file, isolation_level=None, timeout=TIMEOUT_S,
                                         check_same_thread=False)
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            raise LibraryError(f"{self.file} is not a readable experience library ({exc}); it "
                               "was not changed: move it aside, or restore it from an "
                               "`experience export`") from None

    def _check_schema(self) -> None:
        self._conn.execute("PRAGMA busy_timeout = 60000")
        found = self._read_schema()
        if found is not None and found > SCHEMA_VERSION:
            self._conn.close()
            raise newer_schema(str(self.file), found)
        enable_wal(self._conn, TIMEOUT_S)
        with self._transaction() as conn:
            for statement in _TABLES:
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    def _read_schema(self) -> int | None:
        tables = {r[0] for r in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            if tables:
                raise sqlite3.DatabaseError(f"unexpected tables {sorted(tables)}")
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        return int(row[0]) if row and str(row[0]).isdigit() else None

    # -- the backend -------------------------------------------------------------------------
    def _rows(self, prefix: str = "", limit: int | None = None) -> list[tuple[str, str]]:
        like = prefix.replace("%", "").replace("_", "") + "%"
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        return self._conn.execute(f"SELECT id, body FROM entries WHERE id LIKE ? ORDER BY id{tail}",
                                  (like,)).fetchall()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return write_transaction(self._conn)

    def _body(self, tx: Cursor, entry_id: str) -> str | None:
        row = tx.execute("SELECT body FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return None if row is None else row[0]

    def _put(self, tx: Cursor, entry_id: str, body: str, updated_at: float) -> None:
        tx.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", (entry_id, body, updated_at))

    def _delete(self, tx: Cursor, entry_id: str) -> int:
        return tx.execute("DELETE FROM entries WHERE id = ?", (entry_id,)).rowcount

    def close(self) -> None:
        self._conn.close()


BACKENDS["directory"] = SQLiteLibrary
