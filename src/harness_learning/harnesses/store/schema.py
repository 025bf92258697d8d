"""SQL schema of the SQLite log, and its PostgreSQL dialect (`to_postgres`). Bump SCHEMA_VERSION
on any incompatible change: a store opened by code of another version refuses to touch the log.
MIGRATIONS are written once, for both backends."""

from __future__ import annotations

import re

SCHEMA_VERSION = 3
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
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE proposals ADD COLUMN invalid_kind TEXT",
        "ALTER TABLE proposals ADD COLUMN origin TEXT NOT NULL DEFAULT 'proposer'",
        "ALTER TABLE proposals ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0",
        "ALTER TABLE evaluations ADD COLUMN feedback TEXT",
        BACKFILL_INVALID_KIND),
    2: ("ALTER TABLE evaluations ADD COLUMN refused_by TEXT",),
}
"""Statements that bring a log of version N to N + 1 (applied in one transaction, in order).
Version 2: each proposal keeps its judged `invalid_kind` (filled in from the reason for older
rows), its `origin` and its `cost_usd`;
each evaluation the metric's `feedback` text. Version 3: an evaluation of a refused source
keeps the check that refused it (`refused_by`), which the judge reads instead of the error
text."""
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
  parsed_edit TEXT, candidate_sha TEXT, parsed INTEGER NOT NULL, applied INTEGER NOT NULL,
  valid INTEGER NOT NULL, invalid_kind TEXT, invalid_reason TEXT, completed_fraction REAL,
  selection_score REAL,
  parent_score REAL, reward REAL, reward_parts TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
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

JSON_FIELDS = frozenset(
    {"config", "trace", "prompt", "parsed_edit", "reward_parts", "logprobs", "scores", "payload"}
)
BOOL_FIELDS = frozenset({"parsed", "applied", "valid"})
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
