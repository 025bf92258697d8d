"""Tokenising a corpus in worker processes for the BM25 build, with the serial build's result.

Tokenising is pure Python per word and takes most of a build; a pool of processes splits it.
Each worker keeps its own word cache and vocabulary. For each batch it returns the batch's
distinct terms in order of first occurrence and every token as an index into that list; the
parent numbers terms globally batch by batch, in submission order. Term ids, and so the index
files, are therefore exactly those of a serial build.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from retrieval.tokenizer import IdMapper, Tokenizer

_MAPPER: IdMapper | None = None
Batch = tuple[np.ndarray, np.ndarray, int]
"""(global term id of each token, passage index of each token, passages in the batch)."""


def _init(settings: dict) -> None:
    global _MAPPER
    _MAPPER = IdMapper(Tokenizer.from_settings(settings))


def _tokenize(texts: list[str]) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    ids, doc = _MAPPER.batch_ids(texts)
    distinct, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    terms = [_MAPPER.terms[i] for i in distinct[order].tolist()]
    return terms, rank[inverse].astype(np.int32), doc.astype(np.int32), len(texts)


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

    def _oldest(self) -> tuple[list[str], np.ndarray, np.ndarray, int]:
        try:
            return self._inflight.popleft()[0].result()
        except BrokenProcessPool as exc:
            raise WorkerDied() from exc

    def _finish(self, done: tuple[list[str], np.ndarray, np.ndarray, int]) -> Batch:
        terms, local, doc, n = done
        vocab = self.vocab
        ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in terms), dtype=np.int64,
                          count=len(terms))
        return ids[local], doc.astype(np.int64), n

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
