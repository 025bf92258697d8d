"""Hybrid retrieval: reciprocal-rank fusion of several retrievers (BM25 + Chroma by default).

RRF needs no score calibration between a BM25 score and a cosine similarity: each passage
scores sum(1 / (c + rank)) over the lists it appears in (c = 60, the usual constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from harness_learning.retrieval.passage import Passage
from harness_learning.retrieval.protocol import Retriever


def rrf(lists: Sequence[Sequence[Passage]], k: int, c: float = 60.0) -> list[Passage]:
    """Fuse ranked lists; a passage is identified by (title, text), not by backend id."""
    score: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], Passage] = {}
    for hits in lists:
        for rank, p in enumerate(hits, 1):
            key = (p.title, p.text)
            score[key] = score.get(key, 0.0) + 1.0 / (c + rank)
            first.setdefault(key, p)
    best = sorted(score, key=lambda key: -score[key])[:k]
    return [Passage(key[0], key[1], score[key], first[key].id) for key in best]


class HybridRetriever:
    """Each member retrieves `depth` passages; the fused top k come back, best first."""

    def __init__(self, retrievers: Sequence[Retriever], depth: int = 50, c: float = 60.0) -> None:
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever")
        self.retrievers, self.depth, self.c = list(retrievers), depth, c

    def search(self, query: str, k: int = 5) -> list[Passage]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int = 5) -> list[list[Passage]]:
        depth = max(self.depth, k)
        with ThreadPoolExecutor(len(self.retrievers)) as pool:
            per = list(pool.map(lambda r: r.search_batch(list(queries), depth), self.retrievers))
        return [rrf([lists[i] for lists in per], k, self.c) for i in range(len(queries))]
