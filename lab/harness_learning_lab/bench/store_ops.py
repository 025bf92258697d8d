"""Log store figures: operations per second of the SQLite and PostgreSQL backends on what a
run does most (storing a batch of results, reading finished results back on resume, appending
events, summing the spend), each in a fresh run directory.

    harness-learn bench store --url postgresql://USER@HOST:PORT/DB [--results 2000] [--batch 50]
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.rundir import open_log_store
from harness_learning.harnesses.store import LogStore
from harness_learning.harnesses.store.pgurl import give


def _results(start: int, n: int) -> list[ProblemResult]:
    """Results shaped like a Solver's: one model call each, with its messages."""
    call = ToolCall("llm", {"messages": [{"role": "user", "content": "What is 2 + 2?"}]}, "4",
                    latency_s=0.2, tokens=40, meta={"cost": 0.0001})
    return [ProblemResult(f"p{i}", "4", 1.0, calls=[call], latency_s=0.2, tokens=40)
            for i in range(start, start + n)]


def _rate(count: int, run: Callable[[], Any]) -> float:
    """`count` operations done by `run`, per second."""
    t0 = time.perf_counter()
    run()
    return round(count / max(time.perf_counter() - t0, 1e-9), 1)


def measure_store(store: LogStore, results: int, batch: int, events: int) -> dict[str, float]:
    """Figures of one open store (left holding what was written)."""
    sha = store.put_version("def build_graph(tools): ...\n")
    ids = [f"p{i}" for i in range(results)]

    def put() -> None:
        for start in range(0, results, batch):
            store.put_results(sha, "selection", 1, _results(start, min(batch, results - start)))

    def get() -> None:
        for start in range(0, results, batch):
            assert len(store.get_results(sha, ids[start:start + batch], "selection")) > 0

    def append() -> None:
        for i in range(events):
            store.append_event("bench", {"i": i})

    def spent() -> None:
        for _ in range(10):
            store.spent()

    return {"put_results_per_s": _rate(results, put), "get_results_per_s": _rate(results, get),
            "append_event_per_s": _rate(events, append), "spent_per_s": _rate(10, spent)}


def measure(url: str, results: int = 2000, batch: int = 50, events: int = 500) -> dict[str, Any]:
    """Both backends on the same work; the PostgreSQL run's schema is dropped afterwards."""
    out: dict[str, Any] = {"results": results, "batch": batch, "events": events}
    give(url)  # the database the caller named to be measured
    with tempfile.TemporaryDirectory(prefix="hl-bench-store-") as tmp:
        for name, store_url in (("sqlite", ""), ("postgresql", url)):
            store = open_log_store(Path(tmp) / name, store_url or None)
            try:
                out[name] = measure_store(store, results, batch, events)
            finally:
                drop = getattr(store, "drop", None)
                if drop is not None:
                    drop()
                store.close()
    return out
