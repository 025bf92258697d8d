"""Move a whole run between stores (or machines) as JSON Lines: one record per line.

The first line is a header naming the schema version. Import reads and checks the whole file
before writing anything, so a bad line (reported as `path:line`) leaves the target untouched.
An export of log schema 3 (a proposal's verdict in ten fields of its own) is read too, its
verdict taken into the proposal's `outcome` as the schema migration does.
Imported events get fresh sequence numbers and timestamps in the target (their order is kept).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from harness_learning.harnesses.store.base import LogStore
from harness_learning.harnesses.store.records import (
    FLAT_VERDICT,
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
READS = (3, SCHEMA_VERSION)
"""The export versions `import_run` reads: this one, and 3 (the verdict's fields flat)."""
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
    lines += [{"kind": "proposal", "data": to_jsonable(p.to_row())} for p in store.iter_proposals()]
    lines += [{"kind": "decision", "data": to_jsonable(d)} for d in store.iter_decisions()]
    lines += [{"kind": "event", "data": to_jsonable(e)} for e in store.iter_events()]
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            # a JSON field of a log written elsewhere may decode to a lone surrogate
            f.write(for_storage(json.dumps(line, ensure_ascii=False)) + "\n")
    return len(lines)


def _read(path: Path) -> list[tuple[str, dict[str, Any]]]:
    records: list[tuple[str, dict[str, Any]]] = []
    version = SCHEMA_VERSION
    with open(path, encoding="utf-8") as f:
        for no, raw in enumerate(f, 1):
            where = f"{path}:{no}"
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not JSON ({e.msg})") from e
            if no == 1:
                version = item.get("schema_version") if isinstance(item, dict) else None
                if version not in READS or item.get("format") != FORMAT:
                    raise ValueError(f"{where}: not a {FORMAT} v{SCHEMA_VERSION} export header: {raw[:80]!r}")
                continue
            kind, data = item.get("kind"), item.get("data")
            if kind != "run" and kind not in KINDS or not isinstance(data, dict):
                raise ValueError(f"{where}: expected {{'kind': one of run/{'/'.join(KINDS)}, 'data': {{...}}}}")
            if kind == "proposal" and version == 3 and isinstance(data, dict):
                data = _from_v3(data, where)
            if kind in KINDS:
                names, missing = _fields(KINDS[kind], data)
                if set(data) - names or missing:
                    raise ValueError(
                        f"{where}: {kind} fields do not match (unknown: {sorted(set(data) - names)}, "
                        f"missing: {sorted(missing)})"
                    )
            if kind == "proposal":
                _outcome_of(data, where)
            records.append((kind, data))
    return records


def _from_v3(data: dict[str, Any], where: str) -> dict[str, Any]:
    """A proposal of a v3 export, its verdict fields taken into its `outcome`; one with a field
    no version knows is left for the field check to name."""
    known = {f.name for f in dataclasses.fields(Proposal)} - {"outcome"} | set(FLAT_VERDICT)
    if set(data) - known:
        return data
    try:
        return to_jsonable(Proposal.from_row(data).to_row())
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: a v3 proposal's verdict is unreadable ({exc})") from exc


def _outcome_of(data: dict[str, Any], where: str) -> None:
    """Refuse a proposal whose outcome is no judge's `Outcome` (naming the line)."""
    if data.get("outcome") is not None and not isinstance(data["outcome"], dict):
        raise ValueError(f"{where}: the proposal's outcome is not a JSON object")
    try:
        Proposal.from_row(data)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{where}: the proposal's outcome is unreadable ({exc})") from exc


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
            store.put_proposal(Proposal.from_row(data))
        elif kind == "decision":
            store.put_decision(Decision(**data))
        else:
            store.append_event(data["kind"], data["payload"])
    return len(records)
