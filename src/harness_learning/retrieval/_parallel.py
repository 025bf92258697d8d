"""Tokenising a corpus in worker processes for the BM25 build, with the serial build's result.

Tokenising is pure Python per word and takes most of a build; a pool of processes splits it.
Each worker keeps its own word cache and vocabulary, and numbers terms in the order it first
meets them. For each batch it returns its tokens as those worker-local ids, and only the terms
that are new to the worker. The parent, taking batches in submission order, gives each of
those terms its global id (a new one if no earlier batch had it) and maps the batch's ids
through that worker's table in one numpy step.

Why the ids equal a serial build's: a worker takes batches in submission order, so a term it
met in an earlier batch got its global id when the parent took that batch. A term new to the
whole corpus is therefore new to its worker too, and comes in its batch's order of first
occurrence. Term ids, and so the index files, are exactly those of a serial build.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from harness_learning.retrieval.tokenizer import IdMapper, Tokenizer

_MAPPER: IdMapper | None = None
Batch = tuple[np.ndarray, np.ndarray, int]
"""(global term id of each token, passage index of each token, passages in the batch)."""


def _init(settings: dict) -> None:
    global _MAPPER
    _MAPPER = IdMapper(Tokenizer.from_settings(settings))


def _tokenize(texts: list[str]) -> tuple[int, list[str], np.ndarray, np.ndarray, int]:
    """(this worker's pid, terms new to it, tokens as its ids, passage of each token, n)."""
    known = len(_MAPPER.terms)
    ids, doc = _MAPPER.batch_ids(texts)
    return (os.getpid(), _MAPPER.terms[known:], ids.astype(np.int32), doc.astype(np.int32),
            len(texts))


class _Table:
    """One worker's ids -> global ids, grown by doubling (a worker meets millions of terms)."""

    def __init__(self) -> None:
        self.ids, self.size = np.zeros(1024, dtype=np.int64), 0

    def extend(self, new: np.ndarray) -> None:
        end = self.size + len(new)
        if end > len(self.ids):
            grown = np.zeros(max(end, 2 * len(self.ids)), dtype=np.int64)
            grown[: self.size] = self.ids[: self.size]
            self.ids = grown
        self.ids[self.size:end] = new
        self.size = end


class WorkerDied(RuntimeError):
    """A tokenising process died; most often because it could not start (see the message)."""

    def __init__(self) -> None:
        super().__init__(
            "a BM25 tokenising worker process died. Called from a script? Each worker imports "
            "the script again, so the call must sit under `if __name__ == \"__main__\":`; or "
            "pass workers=1 to tokenise in this process.")


class ParallelTokenizer:
    """Batches in, batches out in the same order; `vocab` (term -> id) grows as they finish."""

    def __init__(self, tokenizer: Tokenizer, vocab: dict[str, int], workers: int) -> None:
        self.vocab, self.workers = vocab, workers
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_init, initargs=(tokenizer.settings(),))
        self._inflight: deque[tuple[Future, int]] = deque()  # (future, passages in it)
        self._tables: dict[int, _Table] = {}  # worker pid -> global id of each of its ids

    @property
    def pending(self) -> int:
        """Passages submitted and not yet returned."""
        return sum(n for _, n in self._inflight)

    def submit(self, texts: list[str]) -> Iterator[Batch]:
        """Queue a batch; yield the batches that are done, oldest first, keeping a few queued."""
        try:
            self._inflight.append((self._pool.submit(_tokenize, texts), len(texts)))
        except BrokenProcessPool as exc:
            raise WorkerDied() from exc
        while len(self._inflight) > 2 * self.workers:
            yield self._finish(self._oldest())

    def drain(self) -> Iterator[Batch]:
        while self._inflight:
            yield self._finish(self._oldest())

    def _oldest(self) -> tuple[int, list[str], np.ndarray, np.ndarray, int]:
        try:
            return self._inflight.popleft()[0].result()
        except BrokenProcessPool as exc:
            raise WorkerDied() from exc

    def _finish(self, done: tuple[int, list[str], np.ndarray, np.ndarray, int]) -> Batch:
        pid, new_terms, local, doc, n = done
        vocab = self.vocab
        table = self._tables.setdefault(pid, _Table())
        if new_terms:
            table.extend(np.fromiter((vocab.setdefault(t, len(vocab)) for t in new_terms),
                                     dtype=np.int64, count=len(new_terms)))
        return table.ids[local], doc.astype(np.int64), n

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
