"""Writes an evaluation's finished results to the log in batches, off the event loop.

One thread hop and one transaction per problem cost more parent CPU than the bridge itself
(`harness-learn bench round`). Here a result is queued at once and a single drain task
commits whatever has gathered while the previous batch was being written: under load the
batches grow, when idle each result is written immediately.
"""

from __future__ import annotations

import asyncio

from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import LogStore


class ResultWriter:
    """Batched `store.aput_results` for one version, purpose and round."""

    def __init__(self, store: LogStore, sha: str, purpose: str, round_: int) -> None:
        self.store, self.sha, self.purpose, self.round = store, sha, purpose, round_
        self._pending: list[ProblemResult] = []
        self._drain_task: asyncio.Task | None = None

    def add(self, result: ProblemResult) -> None:
        self._pending.append(result)
        if self._drain_task is None or self._drain_task.done():
            self._drain_task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            await self.store.aput_results(self.sha, self.purpose, self.round, batch)

    async def flush(self) -> None:
        """Wait until every added result is committed; a failed write raises here."""
        while self._drain_task is not None:  # `add` may start a new drain while we wait
            task = self._drain_task
            await task
            if self._drain_task is task:
                self._drain_task = None
