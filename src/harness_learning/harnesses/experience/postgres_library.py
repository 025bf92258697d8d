"""The experience library in a PostgreSQL database, which runs on many machines can share.

The library is the schema `hl_experience` of the database a postgresql:// URL names (tables
`meta` and `entries`, as in the SQLite file), so it sits beside whatever else the database
holds (the log store's `hl_run_*` schemas). Every write is one transaction that first takes a
transaction-scoped advisory lock on the library (`LOCK`): PostgreSQL's transactions do not
serialise writers, and a row lock cannot hold an entry that two runs are both about to insert,
so without it two merges of one entry could both read it and one run's outcomes be lost. The
schema is made, and its version checked, under the same lock.

Connections follow the log store's rules (`store.pgurl`): only a URL the user gave this process
is connected to (a run directory's config.json alone never is), with only the password that URL
carries; psycopg is the optional `postgres` extra. Every failure is one `LibraryError` line
naming the URL without its password, with a hint.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.experience.entry import SCHEMA_VERSION
from harness_learning.harnesses.experience.library import (
    BACKENDS,
    URL_FORM,
    Library,
    LibraryError,
    check_location,
    newer_schema,
    no_library,
)
from harness_learning.harnesses.store.base import LogStoreError
from harness_learning.harnesses.store.pgurl import (
    INSTALL_HINT,
    StoreNotGiven,
    connect_params,
    given_url,
)

if TYPE_CHECKING:
    from psycopg import Connection

    from harness_learning.harnesses.store.schema import Cursor

SCHEMA = "hl_experience"
LOCK = "harness-learning experience library"
"""The advisory lock every write takes (per database, so per library)."""
CONNECT_TIMEOUT_S = 10
LOCK_TIMEOUT = "60s"
"""How long a write waits for another's (as SQLite's busy timeout); then one line."""
_TABLES = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.entries (id TEXT PRIMARY KEY, body TEXT NOT NULL, "
    "updated_at DOUBLE PRECISION NOT NULL)",
)
NOT_GIVEN_HINT = ("name it yourself: --experience URL, or the `experience` command's URL argument "
                  "(in Python: harness_learning.harnesses.experience.give_location(URL) first)")


class PostgresLibrary(Library):
    """The library in the database `url` names (created on first use unless `create` is
    False)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.location = check_location(str(url))
        self.skipped: list[str] = []
        self._lock = threading.RLock()
        self._conn: Connection[tuple[Any, ...]] | None = None
        try:
            self._url = given_url(self.location, "a run's config.json")
        except StoreNotGiven:
            raise LibraryError(f"the experience library {self.location} was not given in this "
                               "process (a run directory's word alone is never connected to): "
                               f"{NOT_GIVEN_HINT}") from None
        try:
            from harness_learning.harnesses.store.postgres import psycopg_module

            self._pg = psycopg_module()
        except LogStoreError:
            raise LibraryError(f"the experience library {self.location} needs psycopg: "
                               f"{INSTALL_HINT}") from None
        try:
            self._setup(create)
        except BaseException:
            self.close()
            raise

    def _failed(self, exc: BaseException) -> LibraryError:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return LibraryError(f"the experience library {self.location} failed: {reason} (check "
                            f"the URL, {URL_FORM}, and that its server runs and its database "
                            "exists)")

    def _connection(self) -> Any:
        """The open connection, made again if the last one was lost."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            self._conn = self._pg.connect(self._url, autocommit=True,
                                          connect_timeout=CONNECT_TIMEOUT_S,
                                          application_name="harness-learning experience",
                                          **connect_params(self._url))
        except self._pg.Error as exc:
            raise self._failed(exc) from None
        return self._conn

    def _setup(self, create: bool) -> None:
        """Make the library's tables, or check the stored schema version, under the lock."""
        with self._transaction() as cur:
            tables = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (SCHEMA,))}
            if "meta" in tables:
                row = cur.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = 'schema'"
                                  ).fetchone()
                found = int(row[0]) if row and str(row[0]).isdigit() else None
                if found is not None and found > SCHEMA_VERSION:
                    raise newer_schema(self.location, found)
            elif tables:
                raise LibraryError(f"{self.location} is not a readable experience library (its "
                                   f"schema {SCHEMA} holds other tables: {sorted(tables)}); it "
                                   "was not changed: use another database")
            elif not create:
                raise no_library(self.location, f" (no schema {SCHEMA})")
            for statement in _TABLES:
                cur.execute(statement)
            cur.execute(f"INSERT INTO {SCHEMA}.meta VALUES ('schema', %s) ON CONFLICT DO NOTHING",
                        (str(SCHEMA_VERSION),))

    # -- the backend -------------------------------------------------------------------------
    def _rows(self, prefix: str = "", limit: int | None = None) -> list[tuple[str, str]]:
        like = prefix.replace("%", "").replace("_", "").replace("\\", "") + "%"
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        with self._lock:
            conn = self._connection()
            try:
                return conn.execute(f"SELECT id, body FROM {SCHEMA}.entries WHERE id LIKE %s "
                                    f"ORDER BY id{tail}", (like,)).fetchall()
            except self._pg.Error as exc:
                raise self._failed(exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (LOCK,))
                    yield cur
            except self._pg.Error as exc:
                raise self._failed(exc) from None

    def _body(self, tx: Cursor, entry_id: str) -> str | None:
        row = tx.execute(f"SELECT body FROM {SCHEMA}.entries WHERE id = %s", (entry_id,)
                         ).fetchone()
        return None if row is None else row[0]

    def _put(self, tx: Cursor, entry_id: str, body: str, updated_at: float) -> None:
        tx.execute(f"INSERT INTO {SCHEMA}.entries VALUES (%s, %s, %s) ON CONFLICT (id) DO "
                   "UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at",
                   (entry_id, body, updated_at))

    def _delete(self, tx: Cursor, entry_id: str) -> int:
        return tx.execute(f"DELETE FROM {SCHEMA}.entries WHERE id = %s", (entry_id,)).rowcount

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()


BACKENDS["postgres"] = PostgresLibrary
