"""The batched result writer: everything added is committed by flush, in fewer transactions."""

from __future__ import annotations

import asyncio

import pytest

from harness_learning.graphs.adapter.result_writer import ResultWriter
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import SQLiteLogStore


def _result(i: int) -> ProblemResult:
    return ProblemResult(problem_id=f"p{i}", answer=str(i), score=float(i % 2), error=None,
                         error_kind=None, traceback=None, calls=[], latency_s=0.01, tokens=i)


def test_every_result_is_committed_in_batches(tmp_path):
    store = SQLiteLogStore(tmp_path)
    store.init_run({})
    batches: list[int] = []
    real = store.put_results

    def counting(sha, purpose, round_, results):
        batches.append(len(results))
        real(sha, purpose, round_, results)

    store.put_results = counting

    async def main():
        writer = ResultWriter(store, "abc", "selection", 1)
        for i in range(50):
            writer.add(_result(i))
            if i % 10 == 0:
                await asyncio.sleep(0)
        await writer.flush()

    asyncio.run(main())
    rows = {e.problem_id: e.result for e in store.iter_evaluations(sha="abc")}
    assert sorted(rows) == sorted(f"p{i}" for i in range(50))
    assert rows["p7"] == _result(7)
    assert sum(batches) == 50 and len(batches) < 50


def test_a_failed_write_raises_at_flush(tmp_path):
    store = SQLiteLogStore(tmp_path)

    def broken(*args):
        raise OSError("disk full")

    store.put_results = broken

    async def main():
        writer = ResultWriter(store, "abc", "selection", 1)
        writer.add(_result(1))
        await writer.flush()

    with pytest.raises(OSError, match="disk full"):
        asyncio.run(main())
