"""Move a whole run between stores (or machines) as JSON Lines: one record per line.

The first line is a header naming the schema version. Import reads and checks the whole file
before writing anything, so a bad line (reported as `path:line`) leaves the target untouched.
Imported events get fresh sequence numbers and timestamps in the target (their order is kept).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from harness_learning.harnesses.store.base import LogStore
from harness_learning.harnesses.store.records import (
    Decision,
    Evaluation,
    Event,
    Proposal,
    Version,
    to_jsonable,
)
from harness_learning.harnesses.store.schema import SCHEMA_VERSION
from harness_learning.harnesses.text_safety import for_storage

FORMAT = "harness-learning-log"
KINDS: dict[str, type] = {
    "version": Version,
    "evaluation": Evaluation,
    "proposal": Proposal,
    "decision": Decision,
    "event": Event,
}


def export_run(store: LogStore, path: str | Path) -> int:
    """Write every record of the store; returns the number of lines."""
    run = store.get_run()
    lines: list[dict[str, Any]] = [{"format": FORMAT, "schema_version": SCHEMA_VERSION}]
    if run is not None:
        lines.append({"kind": "run", "data": to_jsonable(run)})
    lines += [{"kind": "version", "data": to_jsonable(v)} for v in store.iter_versions()]
    lines += [{"kind": "evaluation", "data": to_jsonable(e.to_row())}
              for e in store.iter_evaluations()]
    lines += [{"kind": "proposal", "data": to_jsonable(p)} for p in store.iter_proposals()]
    lines += [{"kind": "decision", "data": to_jsonable(d)} for d in store.iter_decisions()]
    lines += [{"kind": "event", "data": to_jsonable(e)} for e in store.iter_events()]
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            # a JSON field of a log written elsewhere may decode to a lone surrogate
            f.write(for_storage(json.dumps(line, ensure_ascii=False)) + "\n")
    return len(lines)


def _read(path: Path) -> list[tuple[str, dict[str, Any]]]:
    records: list[tuple[str, dict[str, Any]]] = []
    with open(path, encoding="utf-8") as f:
        for no, raw in enumerate(f, 1):
            where = f"{path}:{no}"
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not JSON ({e.msg})") from e
            if no == 1:
                if item.get("format") != FORMAT or item.get("schema_version") != SCHEMA_VERSION:
                    raise ValueError(f"{where}: not a {FORMAT} v{SCHEMA_VERSION} export header: {raw[:80]!r}")
                continue
            kind, data = item.get("kind"), item.get("data")
            if kind != "run" and kind not in KINDS or not isinstance(data, dict):
                raise ValueError(f"{where}: expected {{'kind': one of run/{'/'.join(KINDS)}, 'data': {{...}}}}")
            if kind in KINDS:
                names, missing = _fields(KINDS[kind], data)
                if set(data) - names or missing:
                    raise ValueError(
                        f"{where}: {kind} fields do not match (unknown: {sorted(set(data) - names)}, "
                        f"missing: {sorted(missing)})"
                    )
            records.append((kind, data))
    return records


def _fields(cls: type, data: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The field names a record of `cls` may have in an export, and those `data` lacks."""
    if cls is Evaluation:  # exported flat (`Evaluation.to_row`)
        return set(Evaluation.COLUMNS), {"run_id", "sha", "purpose", "round", "problem_id"} - set(data)
    fields = dataclasses.fields(cls)
    missing = {f.name for f in fields if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING} - set(data)
    return {f.name for f in fields}, missing


def import_run(store: LogStore, path: str | Path) -> int:
    """Load an export into a store (normally a fresh one); returns the number of records."""
    records = _read(Path(path))
    for kind, data in records:
        if kind == "run":
            store.init_run(data["config"], data["run_id"])
        elif kind == "version":
            store.put_version(data["source"], data["parent_sha"], data["round"], data["note"])
        elif kind == "evaluation":
            store.put_evaluations([Evaluation.from_row(data)])
        elif kind == "proposal":
            store.put_proposal(Proposal(**data))
        elif kind == "decision":
            store.put_decision(Decision(**data))
        else:
            store.append_event(data["kind"], data["payload"])
    return len(records)
