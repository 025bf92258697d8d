"""`ResponseCache`: a persistent SQLite cache of deterministic model responses.

Only deterministic calls are cached (temperature 0 or a seed given; the client decides).
The database runs in WAL mode with a busy timeout, one connection per thread, so several
threads of one process and several processes can read and write it at once.

The model client reads with `get` (a point read) and writes with `put_later`: a background
thread commits queued values in batches, so an event loop serving thousands of calls never
waits on the disk nor pays a thread hop per call. Queued values are visible to `get` at once;
`flush`, `close` and interpreter exit write them. A crash loses at most the last batch, which
only costs those calls being made again.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import sqlite3
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

from harness_learning.harnesses.sqlite_wal import enable_wal

BUSY_TIMEOUT_S = 30.0
"""How long a statement waits for another connection's lock (other threads, other processes)."""
_SHARED: weakref.WeakValueDictionary[Path, ResponseCache] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()
BATCH_WINDOW_S = 0.05
"""How long the writer gathers queued values before one commit."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of (model, messages, params); the seed is among params."""
    blob = json.dumps([model, messages, params], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Key -> JSON-serialisable dict, persisted in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._pending: dict[str, str] = {}
        self._written = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._writer: threading.Thread | None = None
        self._conn().execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            enable_wal(conn, BUSY_TIMEOUT_S)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @classmethod
    def shared(cls, path: str | Path) -> ResponseCache:
        """The process's one cache object for `path`, so clients sharing a file also share
        its queued writes."""
        resolved = Path(path).expanduser().resolve()
        with _SHARED_LOCK:
            cache = _SHARED.get(resolved)
            if cache is None:
                cache = _SHARED[resolved] = cls(resolved)
            return cache

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored (or queued) value, or None; counts a hit or a miss."""
        with self._lock:
            blob = self._pending.get(key)
        if blob is None:
            row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            blob = None if row is None else row[0]
        with self._lock:
            if blob is None:
                self.misses += 1
                return None
            self.hits += 1
        return json.loads(blob)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
            (key, json.dumps(value, sort_keys=True), time.time()),
        )

    def put_later(self, key: str, value: dict[str, Any]) -> None:
        """Queue a write for the background writer; `get` sees it at once."""
        blob = json.dumps(value, sort_keys=True)
        with self._lock:
            self._pending[key] = blob
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="response-cache",
                                                daemon=True)
                self._writer.start()
                atexit.register(_flush_at_exit, weakref.ref(self))
        self._wake.set()

    def flush(self, timeout: float | None = 60.0) -> None:
        """Wait until every queued value is committed."""
        with self._lock:
            self._written.wait_for(lambda: not self._pending or self._writer is None, timeout)

    def _write_loop(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(BATCH_WINDOW_S)  # let answers arriving together share one commit
            self._wake.clear()
            with self._lock:
                batch = dict(self._pending)
                if not batch and self._writer is None:
                    return
            if batch:
                try:
                    self._commit(batch)
                except sqlite3.Error as exc:  # a cache: losing entries costs calls, not results
                    warnings.warn(f"{self.path}: {len(batch)} cached responses not written: {exc}",
                                  RuntimeWarning, stacklevel=1)
            with self._lock:
                for k, v in batch.items():
                    if self._pending.get(k) == v:
                        del self._pending[k]
                self._written.notify_all()

    def _commit(self, batch: dict[str, str]) -> None:
        conn, now = self._conn(), time.time()
        with conn:
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                [(k, v, now) for k, v in batch.items()])

    def __len__(self) -> int:
        self.flush()
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        with self._lock:
            if key in self._pending:
                return True
        row = self._conn().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone()
        return row is not None

    def close(self) -> None:
        """Write what is queued, stop the writer and close every connection."""
        self.flush()
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            self._wake.set()
            writer.join(timeout=10)
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"


def _flush_at_exit(ref: weakref.ref) -> None:
    cache = ref()
    if cache is not None:
        cache.flush(timeout=10)
