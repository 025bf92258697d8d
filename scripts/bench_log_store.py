"""Write throughput of the SQLite execution log: one committed transaction per evaluation row,
with the default synchronous=NORMAL and with FULL (an fsync per write). Prints figures.

    .venv/bin/python scripts/bench_log_store.py [rows]
"""

from __future__ import annotations

import sys
import tempfile
import time

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import Evaluation, SQLiteLogStore


def bench(rows: int, synchronous: str) -> float:
    with tempfile.TemporaryDirectory() as tmp, SQLiteLogStore(tmp, synchronous=synchronous) as store:
        calls = [ToolCall("llm", {"messages_or_prompt": "q " * 400}, "a " * 100)] * 3
        start = time.perf_counter()
        for i in range(rows):
            result = ProblemResult(f"p{i}", "42", 1.0, calls=calls)
            store.put_evaluations([Evaluation("run", "sha", "selection", 1, result)])
        elapsed = time.perf_counter() - start
        assert len(store.get_results("sha", [f"p{i}" for i in range(rows)], "selection")) == rows
    return elapsed


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    for mode in ("NORMAL", "FULL"):
        s = bench(n, mode)
        print(f"synchronous={mode:6s} {n} evaluation rows (~3.6 kB each): {s:.2f} s, "
              f"{n / s:,.0f} committed writes/s, {1000 * s / n:.2f} ms each")
