"""Stream records out of JSON-list and JSON-lines files without loading the file.

Large dataset files (2Wiki's official `train.json`, MuSiQue's JSONL) must not become one big
Python list, so a JSON array is decoded element by element from a bounded text buffer. Every
error names the file and the line where the bad record starts.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path

_CHUNK = 1 << 20
_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class CorpusError(ValueError):
    """Bad corpus input: the message names the file and line (or record)."""


def _text_chunks(path: Path) -> Iterator[tuple[str, int]]:
    """Yield (decoded text, newlines before it); a non-UTF-8 byte raises with its line."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    lines = 0
    with open(path, "rb") as f:
        while True:
            raw = f.read(_CHUNK)
            try:
                text = decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as e:
                line = lines + raw[: max(e.start, 0)].count(b"\n") + 1
                raise CorpusError(f"{path}:{line}: not UTF-8 ({e.reason} at byte {e.start})") from e
            yield text, lines
            lines += raw.count(b"\n")
            if not raw:
                return


def iter_json_array(path: Path) -> Iterator[tuple[int, object]]:
    """Yield (line, element) for each element of a top-level JSON array, streamed."""
    buf, pos, line = "", 0, 1
    started = ended = False
    for text, _ in _text_chunks(path):
        buf = buf[pos:] + text
        pos = 0
        eof = not text
        while True:
            while pos < len(buf) and buf[pos] in _WS:
                line += buf[pos] == "\n"
                pos += 1
            if pos >= len(buf):
                break
            ch = buf[pos]
            if not started:
                if ch != "[":
                    raise CorpusError(f"{path}:{line}: expected a JSON list ('[') or JSON lines")
                started, pos = True, pos + 1
                continue
            if ended:
                raise CorpusError(f"{path}:{line}: unexpected data after the closing ']'")
            if ch in ",]":
                ended = ch == "]"
                pos += 1
                continue
            try:
                obj, end = _DECODER.raw_decode(buf, pos)
            except json.JSONDecodeError as e:
                if not eof and len(buf) - pos < 64 * _CHUNK:
                    break  # the element may continue in the next chunk
                raise CorpusError(f"{path}:{line + buf.count(chr(10), pos, e.pos)}: malformed JSON ({e.msg})") from e
            if end >= len(buf) and not eof:
                break  # a number or literal may be cut at the chunk edge
            yield line, obj
            line += buf.count("\n", pos, end)
            pos = end
        if eof:
            break
    if not started:
        raise CorpusError(f"{path}: empty file")
    if not ended:
        raise CorpusError(f"{path}:{line}: truncated JSON list (no closing ']')")


def iter_json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """Yield (line, record) for each non-blank line of a JSON-lines file."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusError(f"{path}:{n}: not UTF-8 ({e.reason} at column {e.start + 1})") from e
            if not text.strip():
                continue
            try:
                yield n, json.loads(text.lstrip("\ufeff") if n == 1 else text)
            except json.JSONDecodeError as e:
                raise CorpusError(f"{path}:{n}: malformed JSON line ({e.msg}, column {e.colno})") from e


def _first_char(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1].decode("latin-1")


def iter_json_records(path: str | Path) -> Iterator[tuple[int, object]]:
    """Yield (line, record) from a JSON list or JSON-lines file, whichever `path` holds."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    if _first_char(path) == "[":
        yield from iter_json_array(path)
    else:
        yield from iter_json_lines(path)
