"""The default log backend: one SQLite file per run directory (`run_dir/log.sqlite`).

WAL journal, one committed transaction per write (BEGIN IMMEDIATE ... COMMIT), so a process killed
at any moment leaves a consistent file that lost at most the write in flight. With the default
`synchronous=NORMAL` a committed write survives a process crash; pass `synchronous="FULL"` to
also survive an OS crash or power loss at the cost of an fsync per write.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from harness_learning.harnesses.contract import SOLVER_OPS
from harness_learning.harnesses.store.base import (
    LogStore,
    LogStoreError,
    SchemaVersionError,
)
from harness_learning.harnesses.store.records import (
    Decision,
    Evaluation,
    Event,
    Proposal,
    RunMeta,
    Version,
    clean_text,
    source_sha,
    to_jsonable,
)
from harness_learning.harnesses.store.schema import (
    BOOL_FIELDS,
    DDL,
    JSON_FIELDS,
    MIGRATIONS,
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    TABLES,
)
from harness_learning.harnesses.store.spend import PROPOSER_COST_EVENT, spend

FILENAME = "log.sqlite"
R = TypeVar("R")


def _encode(name: str, value: Any) -> Any:
    if name in JSON_FIELDS:
        if value is None and name in {"parsed_edit", "logprobs"}:
            return None
        return clean_text(json.dumps(to_jsonable(value), ensure_ascii=False))
    if name in BOOL_FIELDS:
        return int(bool(value))
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        return clean_text(value)
    return value


def _decode(cls: type[R], row: sqlite3.Row) -> R:
    return cls(**_decode_row(_columns(cls), row))


def _decode_row(names: Iterable[str], row: sqlite3.Row) -> dict[str, Any]:
    out = {}
    for name in names:
        value = row[name]
        if name in JSON_FIELDS and value is not None:
            value = json.loads(value)
        elif name in BOOL_FIELDS:
            value = bool(value)
        out[name] = value
    return out


def _columns(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


class SQLiteLogStore(LogStore):
    """Execution log of one run directory."""

    def __init__(self, run_dir: str | Path, *, synchronous: str = "NORMAL", timeout: float = 30.0):
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / FILENAME
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=timeout
        )
        self._conn.row_factory = sqlite3.Row
        try:
            self._check_schema()
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
            with self._lock:
                self._conn.executescript(f"BEGIN IMMEDIATE;\n{DDL}\nCOMMIT;")
        except BaseException:
            self._conn.close()
            raise

    # -- plumbing ----------------------------------------------------------------------------
    def _check_schema(self) -> None:
        """Read-only look at the file before anything is written to it."""
        try:
            names = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as e:
            raise LogStoreError(f"{self.path} is not a readable SQLite log: {e}") from e
        if SCHEMA_TABLE in names:
            row = self._conn.execute(f"SELECT value FROM {SCHEMA_TABLE} WHERE key='version'").fetchone()
            found = row[0] if row else None
            if found is not None and found.isdigit() and int(found) in MIGRATIONS:
                self._migrate(int(found))
            elif found != str(SCHEMA_VERSION):
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

    def _migrate(self, found: int) -> None:
        """Bring an older log up to `SCHEMA_VERSION`, one version per transaction."""
        for version in range(found, SCHEMA_VERSION):
            with self._tx() as c:
                for statement in MIGRATIONS[version]:
                    c.execute(statement)
                c.execute(f"UPDATE {SCHEMA_TABLE} SET value=? WHERE key='version'",
                          (str(version + 1),))
                c.execute("UPDATE runs SET schema_version=?", (version + 1,))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def _upsert(self, c: sqlite3.Connection, table: str, record: Any, key: tuple[str, ...]) -> None:
        row = record.to_row() if isinstance(record, Evaluation) else {
            n: getattr(record, n) for n in _columns(type(record))}
        cols = [x for x in row if not (table == "events" and x == "seq")]
        values = [_encode(n, row[n]) for n in cols]
        update = ", ".join(f"{n}=excluded.{n}" for n in cols if n not in key)
        sql = (
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {update}"
        )
        c.execute(sql, values)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def integrity_check(self) -> str:
        """SQLite's own verdict on the file ('ok' when sound)."""
        return self._query("PRAGMA integrity_check")[0][0]

    # -- run ---------------------------------------------------------------------------------
    def init_run(self, config: dict[str, Any], run_id: str | None = None) -> RunMeta:
        with self._tx() as c:
            row = c.execute("SELECT * FROM runs LIMIT 1").fetchone()
            if row is None:
                meta = RunMeta(run_id or uuid.uuid4().hex, config, time.time(), SCHEMA_VERSION)
                c.execute(
                    "INSERT INTO runs VALUES (?, ?, ?, ?)",
                    (meta.run_id, _encode("config", config), meta.created_at, SCHEMA_VERSION),
                )
                return meta
        meta = _decode(RunMeta, row)
        if run_id is not None and run_id != meta.run_id:
            raise LogStoreError(f"{self.path} belongs to run {meta.run_id!r}, not {run_id!r}")
        return meta

    def get_run(self) -> RunMeta | None:
        rows = self._query("SELECT * FROM runs LIMIT 1")
        return _decode(RunMeta, rows[0]) if rows else None

    # -- versions ----------------------------------------------------------------------------
    def put_version(
        self, source: str, parent: str | None = None, round_: int = 0, note: str = ""
    ) -> str:
        source = clean_text(source)
        sha = source_sha(source)
        with self._tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO versions VALUES (?, ?, ?, ?, ?, ?)",
                (sha, source, parent, round_, note, time.time()),
            )
        return sha

    def get_version(self, sha: str) -> Version | None:
        rows = self._query("SELECT * FROM versions WHERE sha=?", (sha,))
        return _decode(Version, rows[0]) if rows else None

    def iter_versions(self) -> Iterator[Version]:
        for row in self._query("SELECT * FROM versions ORDER BY rowid"):
            yield _decode(Version, row)

    # -- evaluations -------------------------------------------------------------------------
    def put_evaluations(self, evaluations: Iterable[Evaluation]) -> None:
        batch = list(evaluations)
        now = time.time()
        with self._tx() as c:
            for ev in batch:
                if not ev.created_at:
                    ev = dataclasses.replace(ev, created_at=now)
                self._upsert(c, "evaluations", ev, ("sha", "purpose", "round", "problem_id"))

    def iter_evaluations(
        self, sha: str | None = None, purpose: str | None = None, round: int | None = None
    ) -> Iterator[Evaluation]:
        where, params = [], []
        for name, value in (("sha", sha), ("purpose", purpose), ("round", round)):
            if value is not None:
                where.append(f"{name}=?")
                params.append(value)
        sql = "SELECT * FROM evaluations" + (f" WHERE {' AND '.join(where)}" if where else "")
        for row in self._query(sql + " ORDER BY rowid", params):
            yield Evaluation.from_row(_decode_row(Evaluation.COLUMNS, row))

    def spent(self) -> dict[str, Any]:
        solver_ops = ", ".join(f"'{op}'" for op in SOLVER_OPS)
        calls = (f"FROM json_each(trace) WHERE json_extract(value, '$.tool') IN ({solver_ops})")
        solver = self._query(
            f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM((SELECT COUNT(*) {calls})), 0), "
            f"TOTAL((SELECT TOTAL(json_extract(value, '$.meta.cost')) {calls})) FROM evaluations"
        )[0]
        proposer = self._query(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM proposals"
        )[0]
        proposer_cost = self._query(
            "SELECT TOTAL(json_extract(payload, '$.cost_usd')) FROM events WHERE kind=?",
            (PROPOSER_COST_EVENT,))[0][0]
        return spend(solver_calls=solver[1], solver_tokens=solver[0], solver_cost_usd=solver[2],
                     proposer_calls=proposer[0], proposer_tokens=proposer[1],
                     proposer_cost_usd=proposer_cost)

    # -- proposals ---------------------------------------------------------------------------
    def put_proposal(self, proposal: Proposal) -> str:
        if not proposal.created_at:
            proposal = dataclasses.replace(proposal, created_at=time.time())
        with self._tx() as c:
            self._upsert(c, "proposals", proposal, ("id",))
        return proposal.id

    def update_proposal(self, proposal_id: str, **fields: Any) -> None:
        known = set(_columns(Proposal)) - {"id"}
        unknown = set(fields) - known
        if unknown:
            raise ValueError(f"unknown proposal fields: {', '.join(sorted(unknown))}")
        if not fields:
            return
        sets = ", ".join(f"{n}=?" for n in fields)
        values = [_encode(n, v) for n, v in fields.items()]
        with self._tx() as c:
            cur = c.execute(f"UPDATE proposals SET {sets} WHERE id=?", (*values, proposal_id))
            if cur.rowcount == 0:
                raise KeyError(f"no proposal {proposal_id!r} in {self.path}")

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        rows = self._query("SELECT * FROM proposals WHERE id=?", (proposal_id,))
        return _decode(Proposal, rows[0]) if rows else None

    def iter_proposals(self, round: int | None = None) -> Iterator[Proposal]:
        if round is None:
            rows = self._query("SELECT * FROM proposals ORDER BY rowid")
        else:
            rows = self._query("SELECT * FROM proposals WHERE round=? ORDER BY rowid", (round,))
        for row in rows:
            yield _decode(Proposal, row)

    # -- decisions and events ----------------------------------------------------------------
    def _put_decision(self, decision: Decision) -> None:
        if not decision.created_at:
            decision = dataclasses.replace(decision, created_at=time.time())
        with self._tx() as c:
            self._upsert(c, "decisions", decision, ("round",))

    def iter_decisions(self) -> Iterator[Decision]:
        for row in self._query("SELECT * FROM decisions ORDER BY round"):
            yield _decode(Decision, row)

    def append_event(self, kind: str, payload: dict[str, Any] | None = None) -> int:
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO events (ts, kind, payload) VALUES (?, ?, ?)",
                (time.time(), kind, _encode("payload", payload or {})),
            )
            return int(cur.lastrowid)

    def iter_events(self, after_seq: int = 0, kinds: Iterable[str] | None = None) -> Iterator[Event]:
        rows = self._query("SELECT * FROM events WHERE seq>? ORDER BY seq", (after_seq,))
        wanted = set(kinds) if kinds is not None else None
        for row in rows:
            if wanted is None or row["kind"] in wanted:
                yield _decode(Event, row)
