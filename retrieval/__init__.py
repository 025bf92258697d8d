"""Corpora, BM25 and Chroma indexes, one Retriever protocol. Imports no other project package.

Heavy engines (bm25s, chromadb, torch) load lazily, on first use of the class that needs them.
"""

from harness_learning.retrieval.bm25 import BM25Index, RankBM25Index
from harness_learning.retrieval.build import BuildSummary, build_index, open_index
from harness_learning.retrieval.corpus import CORPUS_KINDS, iter_corpus
from harness_learning.retrieval.jsonstream import CorpusError
from harness_learning.retrieval.passage import Passage
from harness_learning.retrieval.protocol import Retriever


def __getattr__(name: str):
    if name in ("ChromaIndex", "IndexMismatchError"):
        from harness_learning.retrieval import chroma

        return getattr(chroma, name)
    if name == "HybridRetriever":
        from harness_learning.retrieval.hybrid import HybridRetriever

        return HybridRetriever
    raise AttributeError(name)


__all__ = [
    "BM25Index", "BuildSummary", "CORPUS_KINDS", "ChromaIndex", "CorpusError", "HybridRetriever",
    "IndexMismatchError", "Passage", "RankBM25Index", "Retriever", "build_index", "iter_corpus",
    "open_index",
]
