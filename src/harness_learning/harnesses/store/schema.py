"""SQL schema of the SQLite log, and its PostgreSQL dialect (`to_postgres`). Bump SCHEMA_VERSION
on any incompatible change: a store opened by code of another version refuses to touch the log.
MIGRATIONS are written once, for both backends."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from harness_learning.harnesses.store.base import LogStoreError
from harness_learning.harnesses.store.records import FLAT_VERDICT, outcome_from_flat

SCHEMA_VERSION = 4
_HEAD = "substr(invalid_reason, 1, instr(invalid_reason, ':') - 1)"
BACKFILL_INVALID_KIND = (
    "UPDATE proposals SET invalid_kind = CASE "
    "WHEN invalid_reason LIKE 'did not complete the evaluation%' THEN 'incomplete' "
    f"WHEN instr(invalid_reason, ':') > 1 AND instr({_HEAD}, ' ') = 0 THEN {_HEAD} "
    "ELSE 'invalid' END "
    "WHERE valid = 0 AND invalid_kind IS NULL AND invalid_reason IS NOT NULL "
    "AND invalid_reason <> ''")
"""A version-1 log kept only the reason text ("<kind>: <detail>"): its kind is read out once,
here, so every reader reads `invalid_kind` and none parses reasons."""


class Rows(Protocol):
    """What a statement gives back (a sqlite3 or psycopg cursor): its rows, and how many
    rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Cursor(Protocol):
    """What the backends' shared statements and the migration steps use of a transaction
    (a sqlite3 `Connection`, a psycopg `Cursor`): statements in the backend's placeholder."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> Rows: ...

    def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> object: ...


Step = Callable[[Cursor, Callable[[str], str], Callable[[str, Any], Any]], None]
"""A migration step written in Python: (cursor in the migration's transaction, the backend's
`?`-to-placeholder translation, its value encoding)."""


def _stored_json(text: object, what: str) -> Any:
    if text is None or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise LogStoreError(f"cannot carry the log forward: a stored {what} is not JSON "
                            f"({type(exc).__name__}); nothing was changed") from exc


def verdicts_into_outcomes(cur: Cursor, sql: Callable[[str], str],
                           encode: Callable[[str, Any], Any]) -> None:
    """Version 4: each proposal's verdict columns (`records.FLAT_VERDICT`) become its one
    `outcome`, the judge's record, with the diff its `candidate_diff` event kept; a draft never
    judged gets none."""
    diffs: dict[str, str] = {}
    for row in cur.execute(sql("SELECT payload FROM events WHERE kind=? ORDER BY seq"),
                           ("candidate_diff",)).fetchall():
        payload = _stored_json(row["payload"], "candidate_diff event")
        if isinstance(payload, dict) and isinstance(payload.get("proposal_id"), str):
            diffs[payload["proposal_id"]] = str(payload.get("diff") or "")
    updates = []
    for row in cur.execute(f"SELECT id, {', '.join(FLAT_VERDICT)} FROM proposals").fetchall():
        flat = {name: row[name] for name in FLAT_VERDICT}
        for name in ("parsed_edit", "reward_parts"):
            flat[name] = _stored_json(flat[name], f"proposal {name}")
        outcome = outcome_from_flat(flat, diffs.get(row["id"], ""))
        if outcome is not None:
            updates.append((encode("outcome", outcome.stored()), row["id"]))
    if updates:
        cur.executemany(sql("UPDATE proposals SET outcome=? WHERE id=?"), updates)


DRAFT_PARENT_SCORE = (
    "UPDATE proposals SET parent_score = (SELECT AVG(e.score) FROM evaluations e "
    "WHERE e.sha = proposals.parent_sha AND e.purpose = 'selection' "
    "AND e.round = proposals.round) "
    "WHERE outcome IS NULL AND parent_score IS NULL AND parent_sha IS NOT NULL")
"""A version-3 draft got its parent's score when it was judged; a version-4 proposal has it
when it is drawn, and settling does not write it: a draft carried forward gets it now, the
parent's mean selection score of the round (as the adapter's state held it)."""


MIGRATIONS: dict[int, tuple[str | Step, ...]] = {
    1: ("ALTER TABLE proposals ADD COLUMN invalid_kind TEXT",
        "ALTER TABLE proposals ADD COLUMN origin TEXT NOT NULL DEFAULT 'proposer'",
        "ALTER TABLE proposals ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0",
        "ALTER TABLE evaluations ADD COLUMN feedback TEXT",
        BACKFILL_INVALID_KIND),
    2: ("ALTER TABLE evaluations ADD COLUMN refused_by TEXT",),
    3: ("ALTER TABLE proposals ADD COLUMN outcome TEXT", verdicts_into_outcomes,
        DRAFT_PARENT_SCORE,
        *(f"ALTER TABLE proposals DROP COLUMN {name}" for name in FLAT_VERDICT)),
}
"""Statements that bring a log of version N to N + 1 (applied in one transaction, in order).
Version 2: each proposal keeps its judged `invalid_kind` (filled in from the reason for older
rows), its `origin` and its `cost_usd`;
each evaluation the metric's `feedback` text. Version 3: an evaluation of a refused source
keeps the check that refused it (`refused_by`), which the judge reads instead of the error
text. Version 4: a proposal holds the judge's `Outcome` in one `outcome` column, written once
when it is settled, in place of ten columns of its fields (`verdicts_into_outcomes`)."""
SCHEMA_TABLE = "hl_schema"
TABLES = ("runs", "versions", "evaluations", "proposals", "decisions", "events")

DDL = f"""
CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL,
  schema_version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS versions (
  sha TEXT PRIMARY KEY, source TEXT NOT NULL, parent_sha TEXT, round INTEGER NOT NULL,
  note TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
  run_id TEXT NOT NULL, sha TEXT NOT NULL, purpose TEXT NOT NULL, round INTEGER NOT NULL,
  problem_id TEXT NOT NULL, answer TEXT, score REAL, error TEXT, error_kind TEXT,
  traceback TEXT, trace TEXT NOT NULL, latency_s REAL NOT NULL, tokens INTEGER NOT NULL,
  feedback TEXT, refused_by TEXT, created_at REAL NOT NULL,
  PRIMARY KEY (sha, purpose, round, problem_id));
CREATE TABLE IF NOT EXISTS proposals (
  id TEXT PRIMARY KEY, round INTEGER NOT NULL, group_id TEXT NOT NULL, prompt TEXT NOT NULL,
  completion TEXT NOT NULL, finish_reason TEXT, model TEXT NOT NULL, edit_format TEXT NOT NULL,
  candidate_sha TEXT, outcome TEXT, parent_score REAL, prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, latency_s REAL NOT NULL, logprobs TEXT,
  parent_sha TEXT, origin TEXT NOT NULL DEFAULT 'proposer', cost_usd REAL NOT NULL DEFAULT 0,
  created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS proposals_by_group ON proposals (group_id);
CREATE INDEX IF NOT EXISTS proposals_by_round ON proposals (round);
CREATE TABLE IF NOT EXISTS decisions (
  round INTEGER PRIMARY KEY, current_sha TEXT NOT NULL, chosen_sha TEXT NOT NULL,
  policy TEXT NOT NULL, reason TEXT NOT NULL, scores TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, kind TEXT NOT NULL,
  payload TEXT NOT NULL);
INSERT OR IGNORE INTO {SCHEMA_TABLE} VALUES ('version', '{SCHEMA_VERSION}');
"""

JSON_FIELDS = frozenset({"config", "trace", "prompt", "outcome", "logprobs", "scores", "payload"})
ORDERED = ("versions", "evaluations", "proposals")
"""Tables read back in insertion order (SQLite's rowid): PostgreSQL gives them a `_pos` column."""


def to_postgres(sql: str) -> str:
    """SQLite DDL in PostgreSQL's dialect, column for column: 8-byte numbers (SQLite's INTEGER
    and REAL are 64-bit; PostgreSQL's are 32-bit), a sequence for `events.seq`, and `_pos` in
    the tables SQLite reads in rowid order."""
    sql = re.sub(r"INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY", sql)
    sql = re.sub(r"\bINTEGER\b", "BIGINT", sql)
    sql = re.sub(r"\bREAL\b", "DOUBLE PRECISION", sql)
    sql = re.sub(r"\binstr\(", "strpos(", sql)
    sql = re.sub(r"^INSERT OR IGNORE .*$", "", sql, flags=re.M)
    for table in ORDERED:
        sql = sql.replace(f"EXISTS {table} (", f"EXISTS {table} (_pos BIGSERIAL, ")
    return sql
