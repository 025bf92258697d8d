"""An experience library: judged changes shared by many runs, in a directory (`library.sqlite`,
`sqlite_library`) or in a PostgreSQL database (`postgres_library`).

Why one narrow abstract type: as LangGraph's checkpoint savers do, the backends store rows and
nothing else. `Library` holds everything an entry means (merging outcomes, skipping unreadable
entries, prefix lookup, export); a backend gives five things: its rows, one write transaction,
and reading, writing and deleting one entry's body inside it. `Library(location)` picks the
backend from the location, as `pathlib.Path` picks its flavour: a postgresql:// URL is a
database, anything else a directory. So every caller (the run's end, the search, the
`experience` commands, the benches) works on either.

Why the write transaction is the library's write lock, taken before its first read: two runs
finishing at once each read-modify-write the same entries (an entry's outcomes are merged), so
neither may read an entry the other is about to rewrite. SQLite takes its write lock with
`BEGIN IMMEDIATE`; PostgreSQL with an advisory lock held until the transaction ends (a row lock
cannot lock an entry neither run has inserted yet). Sharing goes through `export`/`import`,
JSON Lines.

Nothing is lost to bad input: a library that cannot be read, one from a newer schema, a
location no backend reads, or a server that does not answer is refused as one `LibraryError`
line before anything is written; an entry that cannot be read (a damaged row, a newer entry
schema) is left where it is, reported in `skipped`, and never overwritten.
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from harness_learning.harnesses.experience.entry import SCHEMA_VERSION, Entry
from harness_learning.harnesses.store.pgurl import SCHEMES, give, is_postgres, remember_password

if TYPE_CHECKING:
    from harness_learning.harnesses.store.schema import Cursor

FILE = "library.sqlite"
"""The SQLite backend's file in the library's directory."""
TIMEOUT_S = 60.0
EXPORT_HEADER = {"format": "harness-learning experience", "schema": SCHEMA_VERSION}
URL_FORM = "postgresql://USER@HOST:PORT/DATABASE"


class LibraryError(ValueError):
    """A library that cannot be used as it is; the message is one line with a hint."""


def check_location(location: str) -> str:
    """The location as it may be stored: a directory as given, a PostgreSQL URL without its
    password (remembered for this process's connections, never written); any other URL is
    refused in one line."""
    url = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):/", str(location))  # a Path keeps one slash
    if not url:
        return location
    scheme = url.group(1)
    if scheme not in SCHEMES:
        raise LibraryError(f"an experience library is a directory or a {URL_FORM} URL, not a "
                           f"{scheme}:// one: give a directory path or a PostgreSQL URL")
    if not str(location).startswith(f"{scheme}://"):
        raise LibraryError(f"{location!r} is no PostgreSQL URL (a path joined it and lost a "
                           f"slash?): give it as text, {URL_FORM}")
    return remember_password(str(location))


def give_location(location: str) -> str:
    """`check_location`, and a PostgreSQL library recorded as the user's own word (a command
    line's or a caller's), so its server may be connected to (`store.pgurl.give`). A library
    URL read from a run directory alone is never connected to."""
    safe = check_location(str(location))
    if is_postgres(safe):
        give(str(location))
    return safe


BACKENDS: dict[str, type[Library]] = {}
"""The library's backends by kind ("directory", "postgres"), each registered by its own module
on import (`experience/__init__` imports both), so this module imports none of them."""


class Library(ABC):
    """An experience library. `Library(location)` opens the one at `location` (made on first
    use unless `create` is False): `SQLiteLibrary` for a directory, `PostgresLibrary` for a
    postgresql:// URL. Use it as a context manager, or `close` it."""

    location: str
    """Where it is, as it may be shown (a URL without its password)."""
    skipped: list[str]
    """One line per stored entry that could not be read (left as it is)."""

    def __new__(cls, location: str | Path, *, create: bool = True) -> Library:
        kind: type[Library] = cls
        if cls is Library:
            kind = BACKENDS["postgres" if is_postgres(check_location(str(location))) else "directory"]
        return super().__new__(kind)

    # -- what a backend gives ----------------------------------------------------------------
    @abstractmethod
    def _rows(self, prefix: str = "", limit: int | None = None) -> list[tuple[str, str]]:
        """(id, body) of the entries whose id starts with `prefix`, by id, at most `limit`."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Cursor]:
        """One write transaction holding the library's write lock from before its first read,
        so no other writer reads or writes in between; committed when the block ends, rolled
        back if it raises. Yields the handle `_body`, `_put` and `_delete` take."""

    @abstractmethod
    def _body(self, tx: Cursor, entry_id: str) -> str | None:
        """The stored body of `entry_id` (None: no such entry), inside `tx`."""

    @abstractmethod
    def _put(self, tx: Cursor, entry_id: str, body: str, updated_at: float) -> None:
        """Store `body` as `entry_id`'s, replacing any, inside `tx`."""

    @abstractmethod
    def _delete(self, tx: Cursor, entry_id: str) -> int:
        """Delete `entry_id` inside `tx`; how many entries went (0 or 1)."""

    @abstractmethod
    def close(self) -> None:
        """Release the backend's connection."""

    # -- what an entry means -----------------------------------------------------------------
    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, entry_id: str, body: str) -> Entry | None:
        try:
            return Entry.from_dict(json.loads(body))
        except (ValueError, RecursionError) as exc:
            self.skipped.append(f"entry {entry_id[:12]} left as it is, unreadable: {exc}")
            return None

    def entries(self) -> list[Entry]:
        """Every readable entry, by id; the unreadable ones are reported in `skipped`."""
        return [e for e in (self._read(i, b) for i, b in self._rows()) if e is not None]

    def get(self, prefix: str) -> Entry | None:
        """The entry whose id starts with `prefix` (None: none, or more than one)."""
        rows = self._rows(prefix.strip().lower(), 2)
        return self._read(*rows[0]) if len(rows) == 1 else None

    def add(self, entries: Iterable[Entry]) -> int:
        """Merge `entries` in, one transaction: an entry already held gains their outcomes.
        An unreadable stored entry is not overwritten (reported in `skipped`). Returns how
        many entries were written."""
        written = 0
        with self._transaction() as tx:
            for entry in entries:
                body = self._body(tx, entry.id)
                if body is not None:
                    held = self._read(entry.id, body)
                    if held is None:
                        continue
                    entry = held.merged(entry)
                self._put(tx, entry.id, _dumps(entry), time.time())
                written += 1
        return written

    def remove(self, ids: Iterable[str]) -> int:
        with self._transaction() as tx:
            return sum(self._delete(tx, i) for i in ids)

    def replace_entries(self, entries: Iterable[Entry]) -> None:
        """Write `entries` as they are (their outcomes not merged): `prune`'s rewrite."""
        with self._transaction() as tx:
            for entry in entries:
                self._put(tx, entry.id, _dumps(entry), time.time())

    def export(self, path: Path) -> int:
        """Every readable entry as JSON Lines (a header line first), written atomically."""
        entries = self.entries()
        tmp = path.with_name(path.name + ".tmp")
        lines = [json.dumps(EXPORT_HEADER), *(_dumps(e) for e in entries)]
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(path)
        return len(entries)


def _dumps(entry: Entry) -> str:
    """An entry's stored text: ASCII JSON (no NUL or lone surrogate reaches a backend)."""
    return json.dumps(entry.to_dict(), sort_keys=True)


def newer_schema(where: str, found: int) -> LibraryError:
    return LibraryError(f"{where} was written by a newer harness-learning (library schema "
                        f"{found}; this one reads up to {SCHEMA_VERSION}); it was not changed: "
                        "upgrade harness-learning to use it")


def no_library(where: str, why: str = "") -> LibraryError:
    return LibraryError(f"{where} holds no experience library{why}: `harness-learn experience "
                        "add RUN_DIR --to PATH` makes one")


def read_export(path: Path) -> tuple[list[Entry], list[str]]:
    """The entries of an `export` file and one line per line that could not be read."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: unreadable ({exc})") from None
    entries, bad = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if number == 1 and isinstance(data, dict) and data.get("format") == EXPORT_HEADER["format"]:
                if int(data.get("schema", 0)) > SCHEMA_VERSION:
                    raise LibraryError(f"{path} was exported by a newer harness-learning (schema "
                                       f"{data['schema']}); upgrade to import it")
                continue
            entries.append(Entry.from_dict(data))
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, LibraryError):
                raise
            bad.append(f"{path}:{number}: skipped, {exc}")
    return entries, bad
