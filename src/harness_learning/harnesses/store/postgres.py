"""The PostgreSQL log backend: a run's log in a database many runs and machines can share.

Each run has a PostgreSQL schema of its own (`hl_run_<hex>`), holding the same tables, columns
and schema version as the SQLite file (`schema.py`'s DDL and MIGRATIONS, translated by
`to_postgres`), so the two backends behave alike and pass one conformance suite. The run
directory names its schema in store.json (`POINTER`), written once when the schema is made, so
a moved run directory still finds its log. Every write is one committed transaction; a
connection lost between calls is made again, one lost mid-call fails it with `StoreUnreachable`
(one line naming the URL), so what was committed stays. psycopg is an optional extra, imported
when a store is opened (`pip install 'harness-learning[postgres]'`); no password is written.
Only a URL the user gave is connected to, with only the credentials it asks for (`pgurl`).
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.contract import SOLVER_OPS
from harness_learning.harnesses.store.base import (
    LogStoreError,
    SchemaVersionError,
)
from harness_learning.harnesses.store.pgurl import (
    INSTALL_HINT,
    connect_params,
    given_url,
    remember_password,
    unreachable,
)
from harness_learning.harnesses.store.schema import (
    DDL,
    MIGRATIONS,
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    TABLES,
    Cursor,
    to_postgres,
)
from harness_learning.harnesses.store.spend import (
    PROPOSER_ATTEMPT_EVENT,
    PROPOSER_COST_EVENT,
    PROPOSER_ORIGIN,
    spend,
)
from harness_learning.harnesses.store.sql import SQLLogStore, encode

if TYPE_CHECKING:
    from psycopg import Connection

POINTER = "store.json"
"""The run directory's record of where its PostgreSQL log is: {"url", "schema"}."""
CONNECT_TIMEOUT_S = 10
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""A run's schema as this backend names them (`hl_run_<hex>`): nothing a handed store.json
could use to add options to the connection (checkpoints.conninfo's search_path)."""


def psycopg_module() -> ModuleType:
    """psycopg, or one line saying how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise LogStoreError(f"a PostgreSQL log store needs psycopg: {INSTALL_HINT}") from exc
    return psycopg


def _encode_pg(name: str, value: object) -> Any:
    """SQLite's encoding; PostgreSQL text cannot hold NUL, which becomes U+FFFD (as SQLite's
    lone surrogates do) so odd model output is stored, not refused."""
    value = encode(name, value)
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


class PostgresLogStore(SQLLogStore):
    """Execution log of one run directory, kept in a PostgreSQL database."""

    PARAM = "%s"
    ORDER = "_pos"  # an identity column: PostgreSQL has no rowid

    def _encode(self, name: str, value: object) -> Any:
        return _encode_pg(name, value)

    def __init__(self, run_dir: str | Path, url: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.pointer = self.run_dir / POINTER
        stored = self._read_pointer()
        given = remember_password(url) if url else None
        self.url = given or stored.get("url") or ""
        if not self.url:
            raise LogStoreError(f"{self.pointer} not found and no PostgreSQL URL given")
        self.url = given_url(self.url, self._named_in())
        self.schema = stored.get("schema") or f"hl_run_{uuid.uuid4().hex[:24]}"
        self.where = f"{self.url} (schema {self.schema})"
        self._pg = psycopg_module()
        self._lock = threading.RLock()
        self._conn: Connection[dict[str, Any]] | None = None
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        if not stored:
            self._write_pointer()

    # -- plumbing ----------------------------------------------------------------------------
    def _named_in(self) -> str:
        """Which file named the URL, for `StoreNotGiven`: config.json, else store.json."""
        config = self.run_dir / "config.json"
        with suppress(OSError, ValueError, AttributeError):
            if json.loads(config.read_text(encoding="utf-8")).get("store") == self.url:
                return str(config)
        return str(self.pointer if self.pointer.is_file() else self.run_dir)

    def _read_pointer(self) -> dict[str, str]:
        if not self.pointer.is_file():
            return {}
        try:
            data = json.loads(self.pointer.read_text(encoding="utf-8"))
            record = {"url": str(data["url"]), "schema": str(data["schema"])}
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise LogStoreError(f"{self.pointer}: unreadable store record: {exc}") from exc
        if not SCHEMA_NAME.fullmatch(record["schema"]):  # it goes into the connection options
            raise LogStoreError(f"{self.pointer}: unreadable store record: schema "
                                f"{record['schema'][:80]!r} is not a plain schema name")
        return record

    def _write_pointer(self) -> None:
        """Once, atomically: of two processes making a run's log at once, the first one's
        schema is the run's, and the second is refused rather than writing elsewhere."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.run_dir / f".{POINTER}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        tmp.write_text(json.dumps({"url": self.url, "schema": self.schema}), encoding="utf-8")
        try:
            os.link(tmp, self.pointer)
        except FileExistsError as exc:
            self.close()
            raise LogStoreError(f"{self.pointer} was written by another process meanwhile; "
                                "open the store again") from exc
        finally:
            tmp.unlink()

    def _connection(self) -> Any:
        """The open connection, made again if the last one was lost."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            conn = self._pg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                    application_name="harness-learning",
                                    **connect_params(self.url))
        except self._pg.Error as exc:
            raise unreachable(self.url, exc) from exc
        from psycopg.rows import dict_row

        conn.row_factory = dict_row
        conn.execute(self._pg.sql.SQL("SET search_path TO {}").format(
            self._pg.sql.Identifier(self.schema)))
        self._conn = conn
        return conn

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """One committed transaction (a cursor inside it); connection failures are
        `StoreUnreachable`, any other error rolls the transaction back and propagates."""
        lost = (self._pg.OperationalError, self._pg.InterfaceError)
        with self._lock:
            conn = self._begin(lost)
            try:
                with conn.cursor() as cur:
                    yield cur
                conn.execute("COMMIT")
            except lost as exc:
                raise unreachable(self.url, exc) from exc
            except BaseException:
                with suppress(*lost):
                    conn.execute("ROLLBACK")
                raise

    def _begin(self, lost: tuple[type[BaseException], ...]) -> Any:
        """A connection inside a new transaction. One lost since the last call (a server
        restart, a failover) is made again, once: its BEGIN failed, so nothing was written."""
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                return conn
            except lost as exc:
                conn.close()
                if attempt == 2:
                    raise unreachable(self.url, exc) from exc
        raise AssertionError("not reached")

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        with self._tx() as cur:
            return cur.execute(sql, tuple(params)).fetchall()

    def _setup(self) -> None:
        """Make or check the run's schema, in one transaction under a per-schema lock."""
        ident = self._pg.sql.Identifier(self.schema)
        with self._tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            names = {r["table_name"] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema=%s",
                (self.schema,))}
            found = self._check_schema(cur, names)
            cur.execute(self._pg.sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
            cur.execute(to_postgres(DDL))
            if found is None:
                cur.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES ('version', %s) "
                            "ON CONFLICT DO NOTHING", (str(SCHEMA_VERSION),))
            elif found < SCHEMA_VERSION:
                self._migrate(cur, found)

    def _check_schema(self, cur: Cursor, names: set[str]) -> int | None:
        """The stored schema version (None for a new schema); refuses another version's."""
        if SCHEMA_TABLE not in names:
            if names & set(TABLES):
                raise SchemaVersionError(
                    f"{self.where} holds log tables ({', '.join(sorted(names & set(TABLES)))}) "
                    "but no schema version record; refusing to write to it.")
            return None
        row = cur.execute(f"SELECT value FROM {SCHEMA_TABLE} WHERE key='version'").fetchone()
        found = row["value"] if row else None
        if found is not None and found.isdigit() and (int(found) in MIGRATIONS
                                                      or int(found) == SCHEMA_VERSION):
            return int(found)
        raise SchemaVersionError(
            f"{self.where} was written with log schema version {found}; this code reads "
            f"version {SCHEMA_VERSION}. Nothing was changed: use a new run directory or the "
            "harness-learning version that wrote it.")

    def _migrate(self, cur: Cursor, found: int) -> None:
        """Bring an older log up to `SCHEMA_VERSION` (inside the setup's transaction)."""
        for version in range(found, SCHEMA_VERSION):
            for step in MIGRATIONS[version]:
                if callable(step):
                    step(cur, self._sql, self._encode)
                else:
                    cur.execute(to_postgres(step))
            cur.execute(f"UPDATE {SCHEMA_TABLE} SET value=%s WHERE key='version'",
                        (str(version + 1),))
            cur.execute("UPDATE runs SET schema_version=%s", (version + 1,))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def drop(self) -> None:
        """Delete this run's schema and everything in it (the run directory is left as is)."""
        with self._tx() as cur:
            cur.execute(self._pg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                self._pg.sql.Identifier(self.schema)))

    def _serialise(self, cur: Cursor, table: str) -> None:
        """A table lock readers pass: PostgreSQL's transactions do not serialise writers."""
        cur.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")

    def _inserted(self, cur: Cursor, statement: str, params: Iterable[Any], column: str) -> int:
        return int(cur.execute(self._sql(f"{statement} RETURNING {column}"),
                               tuple(params)).fetchone()[column])

    # -- spend -------------------------------------------------------------------------------
    def spent(self) -> dict[str, Any]:
        ops = ", ".join(f"'{op}'" for op in SOLVER_OPS)
        calls = f"FROM json_array_elements(trace::json) c WHERE c->>'tool' IN ({ops})"
        cost = ("CASE WHEN json_typeof(c->'meta'->'cost') = 'number' "
                "THEN (c->'meta'->>'cost')::float8 END")
        solver = self._query(
            f"SELECT COALESCE(SUM(tokens), 0) AS tokens, "
            f"COALESCE(SUM((SELECT COUNT(*) {calls})), 0) AS calls, "
            f"COALESCE(SUM((SELECT SUM({cost}) {calls})), 0) AS cost FROM evaluations")[0]
        proposer = self._query(
            "SELECT COUNT(*) FILTER (WHERE origin = %s) AS calls, "
            "COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS tokens FROM proposals",
            (PROPOSER_ORIGIN,))[0]
        second = self._query(
            "SELECT COUNT(*) AS calls FROM events WHERE kind=%s AND "
            "payload::json->>'attempt' <> 'sample'", (PROPOSER_ATTEMPT_EVENT,))[0]
        paid = self._query(
            "SELECT COALESCE(SUM(CASE WHEN json_typeof(payload::json->'cost_usd') = 'number' "
            "THEN (payload::json->>'cost_usd')::float8 END), 0) AS cost FROM events "
            "WHERE kind=%s", (PROPOSER_COST_EVENT,))[0]
        return spend(solver_calls=solver["calls"], solver_tokens=solver["tokens"],
                     solver_cost_usd=solver["cost"], proposer_calls=proposer["calls"] + second["calls"],
                     proposer_tokens=proposer["tokens"], proposer_cost_usd=paid["cost"])
