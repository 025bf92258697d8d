"""An experience library on disk: a directory holding `library.sqlite`, shared by many runs.

Why SQLite in the directory, not JSON files with a lock: two runs finishing at once each
read-modify-write the same entries (an entry's outcomes are merged), and SQLite gives that as
one transaction (`BEGIN IMMEDIATE` takes the write lock before the read, so neither run's
outcomes are lost), atomic on disk and across processes with no lock file to leave behind
when a run is killed; the project already keeps its run logs that way. Sharing goes through
`export`/`import`, JSON Lines.

Nothing is lost to bad input: a file that is no SQLite database, or a library from a newer
schema, is refused as one `LibraryError` line before anything is written; an entry that cannot
be read (a damaged row, a newer entry schema) is left where it is, reported in `skipped`, and
never overwritten.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path

from harness_learning.harnesses.experience.entry import SCHEMA_VERSION, Entry
from harness_learning.harnesses.sqlite_wal import enable_wal, write_transaction

FILE = "library.sqlite"
TIMEOUT_S = 60.0
EXPORT_HEADER = {"format": "harness-learning experience", "schema": SCHEMA_VERSION}
_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, body TEXT NOT NULL, "
    "updated_at REAL NOT NULL)",
)


class LibraryError(ValueError):
    """A library that cannot be used as it is; the message is one line with a hint."""


def check_location(path: str) -> str:
    """`path` if it can name a library; a database URL is refused (directories only so far)."""
    url = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):/", str(path))  # a Path keeps one slash
    if url:
        scheme = url.group(1)
        raise LibraryError(f"an experience library is a directory; a {scheme}:// library is "
                           "not supported yet: give a directory path")
    return path


class Library:
    """The library in directory `path` (created on first use unless `create` is False)."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(check_location(str(path)))
        self.file = self.path / FILE
        self.skipped: list[str] = []
        if not self.file.exists() and not create:
            raise LibraryError(f"{self.path} holds no experience library ({FILE} not found): "
                               "`harness-learn experience add RUN_DIR --to PATH` makes one")
        if self.path.exists() and not self.path.is_dir():
            raise LibraryError(f"{self.path} is a file; an experience library is a directory")
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
            raise LibraryError(f"{self.file} was written by a newer harness-learning (library "
                               f"schema {found}; this one reads up to {SCHEMA_VERSION}); it was "
                               "not changed: upgrade harness-learning to use it")
        enable_wal(self._conn, TIMEOUT_S)
        with self._tx() as conn:
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

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return write_transaction(self._conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, entry_id: str, body: str) -> Entry | None:
        try:
            return Entry.from_dict(json.loads(body))
        except (ValueError, RecursionError) as exc:
            self.skipped.append(f"entry {entry_id[:12]} left as it is, unreadable: {exc}")
            return None

    def entries(self) -> list[Entry]:
        """Every readable entry, by id; the unreadable ones are reported in `skipped`."""
        rows = self._conn.execute("SELECT id, body FROM entries ORDER BY id").fetchall()
        return [e for e in (self._read(i, b) for i, b in rows) if e is not None]

    def get(self, prefix: str) -> Entry | None:
        """The entry whose id starts with `prefix` (None: none, or more than one)."""
        rows = self._conn.execute("SELECT id, body FROM entries WHERE id LIKE ? LIMIT 2",
                                  (prefix.replace("%", "").replace("_", "") + "%",)).fetchall()
        return self._read(*rows[0]) if len(rows) == 1 else None

    def add(self, entries: Iterable[Entry]) -> int:
        """Merge `entries` in, one transaction: an entry already held gains their outcomes.
        An unreadable stored entry is not overwritten (reported in `skipped`). Returns how
        many entries were written."""
        written = 0
        with self._tx() as conn:
            for entry in entries:
                row = conn.execute("SELECT body FROM entries WHERE id = ?", (entry.id,)).fetchone()
                if row is not None:
                    held = self._read(entry.id, row[0])
                    if held is None:
                        continue
                    entry = held.merged(entry)
                conn.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)",
                             (entry.id, json.dumps(entry.to_dict(), sort_keys=True), time.time()))
                written += 1
        return written

    def remove(self, ids: Iterable[str]) -> int:
        with self._tx() as conn:
            return sum(conn.execute("DELETE FROM entries WHERE id = ?", (i,)).rowcount
                       for i in ids)

    def replace_entries(self, entries: Iterable[Entry]) -> None:
        """Write `entries` as they are (their outcomes not merged): `prune`'s rewrite."""
        with self._tx() as conn:
            for entry in entries:
                conn.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)",
                             (entry.id, json.dumps(entry.to_dict(), sort_keys=True), time.time()))

    def export(self, path: Path) -> int:
        """Every readable entry as JSON Lines (a header line first), written atomically."""
        entries = self.entries()
        tmp = path.with_name(path.name + ".tmp")
        lines = [json.dumps(EXPORT_HEADER), *(json.dumps(e.to_dict(), sort_keys=True)
                                              for e in entries)]
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(path)
        return len(entries)


def read_export(path: Path) -> tuple[list[Entry], list[str]]:
    """The entries of an `export` file and one line per line that could not be read."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: unreadable ({exc})") from None
    entries, bad = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if number == 1 and isinstance(data, dict) and data.get("format") == EXPORT_HEADER["format"]:
                if int(data.get("schema", 0)) > SCHEMA_VERSION:
                    raise LibraryError(f"{path} was exported by a newer harness-learning (schema "
                                       f"{data['schema']}); upgrade to import it")
                continue
            entries.append(Entry.from_dict(data))
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, LibraryError):
                raise
            bad.append(f"{path}:{number}: skipped, {exc}")
    return entries, bad
