"""Read records from a JSON list or a JSONL file, one at a time, whatever the file's size.

The official files come both ways (HotpotQA and 2Wiki ship JSON lists of up to ~600 MB,
MuSiQue and the Hugging Face exports JSONL): the first non-blank character decides. A JSON list
is decoded element by element from a sliding buffer, so memory stays at one record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

_CHUNK = 1 << 20
_WS = " \t\r\n"


class RecordError(ValueError):
    """A record that cannot be used, named by file, index (0-based) and id."""

    def __init__(self, path: Path | str, index: int, record_id: object, problem: str):
        self.path, self.index, self.record_id, self.problem = Path(path), index, record_id, problem
        rid = f" (id {record_id!r})" if record_id not in (None, "") else ""
        super().__init__(f"{path}: record {index}{rid}: {problem}")


def iter_json_records(path: Path | str) -> Iterator[tuple[int, dict]]:
    """Yield `(index, record)` from a JSON list or JSONL file (auto-detected)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    with path.open(encoding="utf-8") as fh:
        try:
            head = fh.read(_CHUNK)
        except UnicodeDecodeError as exc:  # name the file: the bare error does not
            raise RecordError(path, 0, None, f"not UTF-8 text: {exc}") from None
        first = head.lstrip(_WS + "\ufeff")[:1]
        if first == "[":
            yield from _iter_array(fh, head, path)
        elif first in ("{", ""):
            yield from _iter_lines(fh, head, path)
        else:
            raise RecordError(path, 0, None, f"expected a JSON list or JSON lines, got {first!r}")


def _iter_lines(fh, head: str, path: Path) -> Iterator[tuple[int, dict]]:
    rest = head + fh.readline() if head and not head.endswith("\n") else head
    lines = _chain_lines(rest, fh)
    index = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(path, index, None, f"line {lineno} is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise RecordError(path, index, None, f"line {lineno} is not a JSON object")
        yield index, record
        index += 1


def _chain_lines(first: str, fh) -> Iterator[str]:
    yield from first.split("\n")
    yield from fh


def _iter_array(fh, buf: str, path: Path) -> Iterator[tuple[int, dict]]:
    decoder = json.JSONDecoder()
    pos = buf.index("[") + 1
    eof = False
    index = 0
    while True:
        pos, buf, eof = _skip_ws(fh, buf, pos, eof)
        if pos >= len(buf):
            raise RecordError(path, index, None, "the JSON list is not closed (file truncated?)")
        if buf[pos] == "]":
            return
        if index:
            if buf[pos] != ",":
                raise RecordError(path, index, None, f"expected ',' between records, got {buf[pos]!r}")
            pos, buf, eof = _skip_ws(fh, buf, pos + 1, eof)
        while True:
            try:
                record, end = decoder.raw_decode(buf, pos)
                if end < len(buf) or eof:
                    break
            except json.JSONDecodeError as exc:
                if eof:
                    raise RecordError(path, index, None, f"not valid JSON: {exc}") from None
            more = fh.read(_CHUNK)
            eof = not more
            buf, pos = buf[pos:] + more, 0
        if not isinstance(record, dict):
            raise RecordError(path, index, None, "a list element is not a JSON object")
        yield index, record
        index += 1
        pos = end
        if pos > _CHUNK:
            buf, pos = buf[pos:], 0


def _skip_ws(fh, buf: str, pos: int, eof: bool) -> tuple[int, str, bool]:
    while True:
        while pos < len(buf) and buf[pos] in _WS:
            pos += 1
        if pos < len(buf) or eof:
            return pos, buf, eof
        more = fh.read(_CHUNK)
        eof = not more
        buf, pos = buf[pos:] + more, 0
