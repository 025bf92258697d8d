"""A third log backend, the conformance suite's double (no product path opens it, so it lives
with the tests): one append-only JSON-lines file per run directory (`log.jsonl`).

Every write appends one line (`{"t": table, "r": record}`) and flushes it; opening the file
replays the lines into memory, later lines replacing earlier ones with the same key (an upsert
is an append). Readable with `jq`, diffable, and easy to ship elsewhere; SQLite remains the
default for its transactions across processes. A torn last line (a kill mid-write) is skipped
on replay; any other unreadable line is an error that names the file and the line.
Records are stored as `to_jsonable` makes them (an evaluation in its flat `to_row` form, as
SQLite stores it), so a field added to a record needs no change here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from harness_learning.harnesses.store.base import LogStore, LogStoreError, SchemaVersionError
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
from harness_learning.harnesses.store.schema import MIGRATIONS, SCHEMA_VERSION

FILENAME = "log.jsonl"
R = TypeVar("R")
TABLES: dict[str, type] = {"runs": RunMeta, "versions": Version, "evaluations": Evaluation,
                           "proposals": Proposal, "decisions": Decision, "events": Event}


def _clean(value: Any) -> Any:
    """What the SQLite backend stores, so both give the same records back: text without lone
    surrogates, NaN as None."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {clean_text(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _key(table: str, r: dict[str, Any]) -> Any:
    if table == "evaluations":
        return (r["sha"], r["purpose"], r["round"], r["problem_id"])
    return {"runs": "run", "versions": r.get("sha"), "proposals": r.get("id"),
            "decisions": r.get("round"), "events": r.get("seq")}[table]


class JsonlLogStore(LogStore):
    """Execution log of one run directory, as JSON lines."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / FILENAME
        self._lock = threading.RLock()
        self._rows: dict[str, dict[Any, dict[str, Any]]] = {t: {} for t in TABLES}
        if self.path.exists():
            self._replay()
        self._file = self.path.open("a", encoding="utf-8")
        size = self.path.stat().st_size
        if not size:
            self._append("schema", {"version": SCHEMA_VERSION})
        elif self.path.read_bytes()[-1:] != b"\n":  # a whole last record without its newline
            self._file.write("\n")
            self._file.flush()

    # -- plumbing ----------------------------------------------------------------------------
    def _replay(self) -> None:
        data = self.path.read_bytes()
        offset = 0
        for number, raw in enumerate(data.split(b"\n"), 1):
            start, offset = offset, offset + len(raw) + 1
            if not raw.strip():
                continue
            try:
                item = json.loads(raw.decode("utf-8", errors="replace"))
                table, record = item["t"], item["r"]
                if table != "schema" and table not in TABLES:
                    raise KeyError(table)
            except (ValueError, KeyError, TypeError) as exc:
                if offset > len(data):  # a torn last line (no newline): cut it off
                    with self.path.open("r+b") as f:
                        f.truncate(start)
                    break
                raise LogStoreError(f"{self.path}, line {number}: not a log record ({exc})") from exc
            if table == "schema":
                # an older version's records read with the newer fields at their defaults
                if record.get("version") != SCHEMA_VERSION and record.get("version") not in MIGRATIONS:
                    raise SchemaVersionError(
                        f"{self.path} was written with log schema version {record.get('version')};"
                        f" this code reads version {SCHEMA_VERSION}. Nothing was changed.")
                continue
            self._rows[table][_key(table, record)] = record

    def _append(self, table: str, record: dict[str, Any]) -> None:
        line = json.dumps({"t": table, "r": record}, ensure_ascii=False)
        self._file.write(line + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        if table != "schema":
            self._rows[table][_key(table, record)] = record

    def _put(self, table: str, record: Any) -> dict[str, Any]:
        # as SQLite stores them: an evaluation flat, a proposal's outcome without its source
        flat = record.to_row() if isinstance(record, Evaluation | Proposal) else record
        data = _clean(to_jsonable(flat))
        with self._lock:
            self._append(table, data)
        return data

    def _decode(self, cls: type[R], data: dict[str, Any]) -> R:
        if cls is Evaluation:
            return Evaluation.from_row(data)  # type: ignore[return-value]
        if cls is Proposal:  # an older version's flat verdict too
            return Proposal.from_row(data)  # type: ignore[return-value]
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})

    def _all(self, table: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._rows[table].values())

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    # -- run ---------------------------------------------------------------------------------
    def init_run(self, config: dict[str, Any], run_id: str | None = None) -> RunMeta:
        with self._lock:
            found = self.get_run()
            if found is None:
                meta = RunMeta(run_id or uuid.uuid4().hex, config, time.time(), SCHEMA_VERSION)
                return self._decode(RunMeta, self._put("runs", meta))
        if run_id is not None and run_id != found.run_id:
            raise LogStoreError(f"{self.path} belongs to run {found.run_id!r}, not {run_id!r}")
        return found

    def get_run(self) -> RunMeta | None:
        rows = self._all("runs")
        return self._decode(RunMeta, rows[0]) if rows else None

    # -- versions ----------------------------------------------------------------------------
    def put_version(self, source: str, parent: str | None = None, round_: int = 0,
                    note: str = "") -> str:
        source = clean_text(source)
        sha = source_sha(source)
        with self._lock:
            if sha not in self._rows["versions"]:
                self._put("versions", Version(sha, source, parent, round_, note, time.time()))
        return sha

    def get_version(self, sha: str) -> Version | None:
        with self._lock:
            row = self._rows["versions"].get(sha)
        return None if row is None else self._decode(Version, row)

    def iter_versions(self) -> Iterator[Version]:
        for row in self._all("versions"):
            yield self._decode(Version, row)

    # -- evaluations -------------------------------------------------------------------------
    def put_evaluations(self, evaluations: Iterable[Evaluation]) -> None:
        now = time.time()
        with self._lock:
            for ev in list(evaluations):
                self._put("evaluations", ev if ev.created_at else
                          dataclasses.replace(ev, created_at=now))

    def iter_evaluations(self, sha: str | None = None, purpose: str | None = None,
                         round: int | None = None) -> Iterator[Evaluation]:
        for row in self._all("evaluations"):
            if all(v is None or row[k] == v for k, v in
                   (("sha", sha), ("purpose", purpose), ("round", round))):
                yield self._decode(Evaluation, row)

    # -- proposals ---------------------------------------------------------------------------
    def put_proposal(self, proposal: Proposal) -> str:
        if not proposal.created_at:
            proposal = dataclasses.replace(proposal, created_at=time.time())
        self._put("proposals", proposal)
        return proposal.id

    def settle_proposal(self, proposal_id: str, sha: str | None, outcome: Outcome) -> None:
        with self._lock:
            row = self._rows["proposals"].get(proposal_id)
            if row is None:
                raise KeyError(f"no proposal {proposal_id!r} in {self.path}")
            if row.get("outcome") is None and not Proposal.from_row(row).settled:
                self._put("proposals", {**row, "candidate_sha": sha,
                                        "outcome": _clean(to_jsonable(outcome.stored()))})

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        with self._lock:
            row = self._rows["proposals"].get(proposal_id)
        return None if row is None else self._decode(Proposal, row)

    def iter_proposals(self, round: int | None = None) -> Iterator[Proposal]:
        for row in self._all("proposals"):
            if round is None or row["round"] == round:
                yield self._decode(Proposal, row)

    # -- decisions and events ----------------------------------------------------------------
    def _put_decision(self, decision: Decision) -> None:
        if not decision.created_at:
            decision = dataclasses.replace(decision, created_at=time.time())
        self._put("decisions", decision)

    def iter_decisions(self) -> Iterator[Decision]:
        for row in sorted(self._all("decisions"), key=lambda r: r["round"]):
            yield self._decode(Decision, row)

    def append_event(self, kind: str, payload: dict[str, Any] | None = None) -> int:
        with self._lock:
            seq = len(self._rows["events"]) + 1
            self._put("events", Event(seq, time.time(), kind, payload or {}))
        return seq

    def iter_events(self, after_seq: int = 0, kinds: Iterable[str] | None = None) -> Iterator[Event]:
        wanted = set(kinds) if kinds is not None else None
        for row in self._all("events"):
            if row["seq"] > after_seq and (wanted is None or row["kind"] in wanted):
                yield self._decode(Event, row)
