"""The default log backend: one SQLite file per run directory (`run_dir/log.sqlite`).

WAL journal, one committed transaction per write (BEGIN IMMEDIATE ... COMMIT), so a process killed
at any moment leaves a consistent file that lost at most the write in flight. With the default
`synchronous=NORMAL` a committed write survives a process crash; pass `synchronous="FULL"` to
also survive an OS crash or power loss at the cost of an fsync per write.

`read_only=True` is for looking (reports, training data, benches): the file is never written,
and a log of an older schema is migrated in a copy held in memory, so a look at an archived run
or a committed fixture leaves it as it was.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness_learning.harnesses.contract import SOLVER_OPS
from harness_learning.harnesses.sqlite_wal import connect_read_only, enable_wal, write_transaction
from harness_learning.harnesses.store.base import (
    LogStoreError,
    SchemaVersionError,
)
from harness_learning.harnesses.store.schema import (
    DDL,
    MIGRATIONS,
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    TABLES,
)
from harness_learning.harnesses.store.spend import (
    PROPOSER_ATTEMPT_EVENT,
    PROPOSER_COST_EVENT,
    PROPOSER_ORIGIN,
    spend,
)
from harness_learning.harnesses.store.sql import SQLLogStore

FILENAME = "log.sqlite"


class SQLiteLogStore(SQLLogStore):
    """Execution log of one run directory."""

    def __init__(self, run_dir: str | Path, *, synchronous: str = "NORMAL", timeout: float = 30.0,
                 read_only: bool = False):
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / FILENAME
        self.where = str(self.path)
        self._lock = threading.RLock()
        self.read_only = False  # set once the file (or its migrated copy) is open
        if read_only:
            self._conn = self._open_read_only(timeout)
            self.read_only = True
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=timeout
        )
        self._conn.row_factory = sqlite3.Row
        try:
            self._check_schema()
            enable_wal(self._conn, timeout)
            self._conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
            with self._lock:
                self._conn.executescript(f"BEGIN IMMEDIATE;\n{DDL}\nCOMMIT;")
        except BaseException:
            self._conn.close()
            raise

    def _open_read_only(self, timeout: float) -> sqlite3.Connection:
        """The file opened for reading only; a log of an older schema (or one missing a table
        added since) copied into memory and brought up to date there: the file keeps its own."""
        if not self.path.is_file():
            raise LogStoreError(f"{self.path}: no log to read (not a run directory?)")
        try:
            self._conn = connect_read_only(self.path, isolation_level=None,
                                           check_same_thread=False, timeout=timeout)
        except sqlite3.DatabaseError as e:
            raise LogStoreError(f"{self.path} is not a readable SQLite log: {e}") from e
        self._conn.row_factory = sqlite3.Row
        try:
            found = self._check_schema(migrate=False)
            if found is None:
                raise LogStoreError(f"{self.path} holds no log tables: not a run's log")
            tables = {r[0] for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if found == SCHEMA_VERSION and tables >= set(TABLES):
                return self._conn
            copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._conn.backup(copy)
        except BaseException:
            self._conn.close()
            raise
        self._conn.close()
        copy.row_factory = sqlite3.Row
        self._conn = copy
        self._migrate(found)  # nothing to do at the current version
        self._conn.executescript(f"BEGIN IMMEDIATE;\n{DDL}\nCOMMIT;")  # tables added since
        return copy

    # -- plumbing ----------------------------------------------------------------------------
    def _check_schema(self, migrate: bool = True) -> int | None:
        """Read-only look at the file before anything is written to it: the schema version
        found (None for a new file), an older one migrated unless `migrate` is false."""
        try:
            names = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as e:
            raise LogStoreError(f"{self.path} is not a readable SQLite log: {e}") from e
        if SCHEMA_TABLE in names:
            row = self._conn.execute(f"SELECT value FROM {SCHEMA_TABLE} WHERE key='version'").fetchone()
            found = row[0] if row else None
            if found is not None and found.isdigit() and int(found) in MIGRATIONS:
                if migrate:
                    self._migrate(int(found))
                return int(found)
            if found != str(SCHEMA_VERSION):
                raise SchemaVersionError(
                    f"{self.path} was written with log schema version {found}; this code reads "
                    f"version {SCHEMA_VERSION}. Nothing was changed: use a new run directory or "
                    "the harness-learning version that wrote it."
                )
        elif names & set(TABLES):
            raise SchemaVersionError(
                f"{self.path} holds log tables ({', '.join(sorted(names & set(TABLES)))}) but no "
                "schema version record; refusing to write to it."
            )
        return SCHEMA_VERSION if SCHEMA_TABLE in names else None

    def _migrate(self, found: int) -> None:
        """Bring an older log up to `SCHEMA_VERSION`, one version per transaction."""
        for version in range(found, SCHEMA_VERSION):
            with self._tx() as c:
                for step in MIGRATIONS[version]:
                    if callable(step):
                        step(c, self._sql, self._encode)
                    else:
                        c.execute(step)
                c.execute(f"UPDATE {SCHEMA_TABLE} SET value=? WHERE key='version'",
                          (str(version + 1),))
                c.execute("UPDATE runs SET schema_version=?", (version + 1,))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise LogStoreError(f"{self.path} was opened read-only: nothing is written to it")
        with self._lock, write_transaction(self._conn) as conn:
            yield conn

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def integrity_check(self) -> str:
        """SQLite's own verdict on the file ('ok' when sound)."""
        return self._query("PRAGMA integrity_check")[0][0]

    def _inserted(self, cur: sqlite3.Connection, statement: str, params: Iterable[Any],
                  column: str) -> int:
        return int(cur.execute(self._sql(statement), tuple(params)).lastrowid)

    # -- spend -------------------------------------------------------------------------------
    def spent(self) -> dict[str, Any]:
        solver_ops = ", ".join(f"'{op}'" for op in SOLVER_OPS)
        calls = (f"FROM json_each(trace) WHERE json_extract(value, '$.tool') IN ({solver_ops})")
        solver = self._query(
            f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM((SELECT COUNT(*) {calls})), 0), "
            f"TOTAL((SELECT TOTAL(json_extract(value, '$.meta.cost')) {calls})) FROM evaluations"
        )[0]
        proposer = self._query(
            "SELECT COALESCE(SUM(origin = ?), 0), COALESCE(SUM(prompt_tokens + completion_tokens), 0) "
            "FROM proposals", (PROPOSER_ORIGIN,))[0]
        second = self._query(
            "SELECT COUNT(*) FROM events WHERE kind=? AND json_extract(payload, '$.attempt') != "
            "'sample'", (PROPOSER_ATTEMPT_EVENT,))[0][0]
        proposer_cost = self._query(
            "SELECT TOTAL(json_extract(payload, '$.cost_usd')) FROM events WHERE kind=?",
            (PROPOSER_COST_EVENT,))[0][0]
        return spend(solver_calls=solver[1], solver_tokens=solver[0], solver_cost_usd=solver[2],
                     proposer_calls=proposer[0] + second, proposer_tokens=proposer[1],
                     proposer_cost_usd=proposer_cost)
