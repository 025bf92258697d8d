"""`ResponseCache`: a persistent SQLite cache of deterministic model responses.

Only deterministic calls are cached (temperature 0 or a seed given; the client decides).
The database runs in WAL mode with a busy timeout, one connection per thread, so several
threads of one process and several processes can read and write it at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

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
        self._conn().execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or None; counts a hit or a miss."""
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        with self._lock:
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
            (key, json.dumps(value, sort_keys=True), time.time()),
        )

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        row = self._conn().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone()
        return row is not None

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"
