"""What the SQL backends (SQLite, PostgreSQL) share: every statement that is the same in both
dialects, written once in SQLite's `?` style, with the records mapped to rows and back.

A backend supplies its connection (`_tx`, `_query`), its placeholder and insertion-order
column, the value encoding its database needs, how it serialises writers of one table
(`_serialise`) and how an insert gives back its new number (`_inserted`); the schema is
`schema.DDL` in both (the PostgreSQL DDL is derived from it), so a record has the same columns
everywhere. Only `spent`, which sums JSON inside the database, is written per dialect.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import uuid
from abc import abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Protocol, TypeVar

from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store.base import LogStore, LogStoreError
from harness_learning.harnesses.store.fields import wrong_field
from harness_learning.harnesses.store.records import (
    Decision,
    Evaluation,
    Event,
    Outcome,
    Proposal,
    RunMeta,
    Version,
    clean_text,
    source_sha,
    to_jsonable,
)
from harness_learning.harnesses.store.schema import JSON_FIELDS, SCHEMA_VERSION, Cursor

R = TypeVar("R")
NULLABLE_JSON = frozenset({"outcome", "logprobs"})


class Row(Protocol):
    """A stored row, read by column name (a `sqlite3.Row`, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...


def encode(name: str, value: object) -> Any:
    """A record field as stored: JSON fields as text, NaN as NULL, and text cleaned of what
    cannot be stored (lone surrogates)."""
    if name in JSON_FIELDS:
        if value is None and name in NULLABLE_JSON:
            return None
        return clean_text(json.dumps(to_jsonable(value), ensure_ascii=False))
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        return clean_text(value)
    return value


def decode_row(names: Iterable[str], row: Row, where: str = "the log") -> dict[str, Any]:
    """The fields `names` of a stored row (anything indexable by column name), as put. A JSON
    field that is not JSON (a damaged or crafted log) is `LogStoreError` naming `where`."""
    out = {}
    for name in names:
        value = row[name]
        if name in JSON_FIELDS and value is not None:
            try:
                value = json.loads(value)
            except (ValueError, TypeError, RecursionError) as exc:
                raise LogStoreError(f"{where}: a stored {name} is not JSON "
                                    f"({type(exc).__name__}: {str(exc)[:80]})") from exc
        out[name] = value
    return out


def columns(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def decode(cls: type[R], row: Row, where: str = "the log") -> R:
    """The record `cls` of a stored row; a value its field cannot hold (a damaged or crafted
    log: text for a number, a list for a mapping) is `LogStoreError` naming `where`."""
    values = decode_row(columns(cls), row, where)
    checked(cls, values, where)
    return cls(**values)


def decode_evaluation(row: Row, where: str = "the log") -> Evaluation:
    """An `Evaluation` from its flat row, its columns checked as `decode` checks a record's."""
    values = decode_row(Evaluation.COLUMNS, row, where)
    checked(Evaluation, values, where)
    checked(ProblemResult, values, where)
    return Evaluation.from_row(values)


def decode_proposal(row: Row, where: str = "the log") -> Proposal:
    """A `Proposal` from its row, its columns and its outcome checked as `decode` checks a
    record's."""
    values = decode_row(columns(Proposal), row, where)
    checked(Proposal, values, where)
    if values["outcome"] is not None:
        if not isinstance(values["outcome"], dict):
            raise LogStoreError(f"{where}: a stored Proposal record is unreadable: outcome is "
                                "not a JSON object")
        checked(Outcome, values["outcome"], where)
    try:
        return Proposal.from_row(values)
    except TypeError as exc:  # an outcome with a field too many or too few
        raise LogStoreError(f"{where}: a stored Proposal record is unreadable: {exc}") from exc


def checked(cls: type, values: dict[str, Any], where: str) -> None:
    wrong = wrong_field(cls, values)
    if wrong:
        raise LogStoreError(f"{where}: a stored {cls.__name__} record is unreadable: {wrong}")


class SQLLogStore(LogStore):
    """The reads and record writes of a log kept in SQL tables."""

    PARAM: ClassVar[str] = "?"
    """The driver's placeholder; statements here are written with `?` and translated."""
    ORDER: ClassVar[str] = "rowid"
    """The column that orders a table's rows as they were inserted."""
    where: str
    """The log's location, for error messages."""

    def _encode(self, name: str, value: object) -> Any:
        return encode(name, value)

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self.PARAM).replace("{order}", self.ORDER)

    def _rows(self, statement: str, params: Iterable[Any] = ()) -> list[Any]:
        return self._query(self._sql(statement), params)

    @abstractmethod
    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows of one statement (each indexable by column name)."""

    @abstractmethod
    def _tx(self) -> Any:
        """A context holding one transaction; it gives an object with `execute` and
        `executemany`, committed on a normal exit and rolled back on an exception."""

    def _upsert(self, cur: Cursor, table: str, records: list[Any], key: tuple[str, ...]) -> None:
        """Insert or update records of one type (`executemany`: one round trip where the
        driver pipelines, as psycopg does)."""
        if not records:
            return
        rows = [r.to_row() if isinstance(r, Evaluation | Proposal) else {
            n: getattr(r, n) for n in columns(type(r))} for r in records]
        cols = list(rows[0])
        update = ", ".join(f"{n}=excluded.{n}" for n in cols if n not in key)
        cur.executemany(self._sql(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {update}"),
            [[self._encode(n, row[n]) for n in cols] for row in rows])

    def _serialise(self, cur: Cursor, table: str) -> None:  # noqa: B027 - SQLite needs nothing
        """Make this transaction the only writer of `table` until it commits (SQLite's
        BEGIN IMMEDIATE already holds the whole file's write lock)."""

    @abstractmethod
    def _inserted(self, cur: Cursor, statement: str, params: Iterable[Any], column: str) -> int:
        """Run one INSERT (in `?` style) and return the `column` the database numbered."""

    # -- run and versions --------------------------------------------------------------------
    def init_run(self, config: dict[str, Any], run_id: str | None = None) -> RunMeta:
        with self._tx() as cur:
            self._serialise(cur, "runs")
            row = cur.execute(self._sql("SELECT * FROM runs LIMIT 1")).fetchone()
            if row is None:
                meta = RunMeta(run_id or uuid.uuid4().hex, config, time.time(), SCHEMA_VERSION)
                cur.execute(self._sql("INSERT INTO runs (run_id, config, created_at, "
                                      "schema_version) VALUES (?, ?, ?, ?)"),
                            (meta.run_id, self._encode("config", config), meta.created_at,
                             SCHEMA_VERSION))
                return meta
        meta = decode(RunMeta, row, self.where)
        if run_id is not None and run_id != meta.run_id:
            raise LogStoreError(f"{self.where} belongs to run {meta.run_id!r}, not {run_id!r}")
        return meta

    def get_run(self) -> RunMeta | None:
        rows = self._rows("SELECT * FROM runs LIMIT 1")
        return decode(RunMeta, rows[0], self.where) if rows else None

    def put_version(
        self, source: str, parent: str | None = None, round_: int = 0, note: str = ""
    ) -> str:
        source = clean_text(source)
        sha = source_sha(source)
        row = {"sha": sha, "source": source, "parent_sha": parent, "round": round_,
               "note": note, "created_at": time.time()}
        with self._tx() as cur:
            cur.execute(self._sql(
                f"INSERT INTO versions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))}) "
                "ON CONFLICT (sha) DO NOTHING"), [self._encode(n, v) for n, v in row.items()])
        return sha

    def get_version(self, sha: str) -> Version | None:
        rows = self._rows("SELECT * FROM versions WHERE sha=?", (sha,))
        return decode(Version, rows[0], self.where) if rows else None

    def iter_versions(self) -> Iterator[Version]:
        for row in self._rows("SELECT * FROM versions ORDER BY {order}"):
            yield decode(Version, row, self.where)

    # -- evaluations -------------------------------------------------------------------------
    def put_evaluations(self, evaluations: Iterable[Evaluation]) -> None:
        now = time.time()
        batch = [ev if ev.created_at else dataclasses.replace(ev, created_at=now)
                 for ev in evaluations]
        with self._tx() as cur:
            self._upsert(cur, "evaluations", batch, ("sha", "purpose", "round", "problem_id"))

    def iter_evaluations(
        self, sha: str | None = None, purpose: str | None = None, round: int | None = None
    ) -> Iterator[Evaluation]:
        where, params = [], []
        for name, value in (("sha", sha), ("purpose", purpose), ("round", round)):
            if value is not None:
                where.append(f"{name}=?")
                params.append(value)
        sql = "SELECT * FROM evaluations" + (f" WHERE {' AND '.join(where)}" if where else "")
        for row in self._rows(sql + " ORDER BY {order}", params):
            yield decode_evaluation(row, self.where)

    # -- proposals ---------------------------------------------------------------------------
    def put_proposal(self, proposal: Proposal) -> str:
        if not proposal.created_at:
            proposal = dataclasses.replace(proposal, created_at=time.time())
        with self._tx() as cur:
            self._upsert(cur, "proposals", [proposal], ("id",))
        return proposal.id

    def settle_proposal(self, proposal_id: str, sha: str | None, outcome: Outcome) -> None:
        with self._tx() as cur:
            done = cur.execute(self._sql("UPDATE proposals SET candidate_sha=?, outcome=? "
                                         "WHERE id=? AND outcome IS NULL"),
                               (sha, self._encode("outcome", outcome.stored()), proposal_id))
            if done.rowcount == 0 and not cur.execute(
                    self._sql("SELECT 1 FROM proposals WHERE id=?"), (proposal_id,)).fetchall():
                raise KeyError(f"no proposal {proposal_id!r} in {self.where}")

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        rows = self._rows("SELECT * FROM proposals WHERE id=?", (proposal_id,))
        return decode_proposal(rows[0], self.where) if rows else None

    def iter_proposals(self, round: int | None = None) -> Iterator[Proposal]:
        if round is None:
            rows = self._rows("SELECT * FROM proposals ORDER BY {order}")
        else:
            rows = self._rows("SELECT * FROM proposals WHERE round=? ORDER BY {order}", (round,))
        for row in rows:
            yield decode_proposal(row, self.where)

    # -- decisions and events ----------------------------------------------------------------
    def _put_decision(self, decision: Decision) -> None:
        if not decision.created_at:
            decision = dataclasses.replace(decision, created_at=time.time())
        with self._tx() as cur:
            self._upsert(cur, "decisions", [decision], ("round",))

    def iter_decisions(self) -> Iterator[Decision]:
        for row in self._rows("SELECT * FROM decisions ORDER BY round"):
            yield decode(Decision, row, self.where)

    def append_event(self, kind: str, payload: dict[str, Any] | None = None) -> int:
        """Appends are serialised, so sequence numbers are in commit order and a reader
        following `after_seq` never skips one committed late."""
        with self._tx() as cur:
            self._serialise(cur, "events")
            return self._inserted(cur, "INSERT INTO events (ts, kind, payload) VALUES (?, ?, ?)",
                                  (time.time(), self._encode("kind", kind),
                                   self._encode("payload", payload or {})), "seq")

    def iter_events(self, after_seq: int = 0, kinds: Iterable[str] | None = None) -> Iterator[Event]:
        rows = self._rows("SELECT * FROM events WHERE seq>? ORDER BY seq", (after_seq,))
        wanted = set(kinds) if kinds is not None else None
        for row in rows:
            if wanted is None or row["kind"] in wanted:
                yield decode(Event, row, self.where)
