"""Corpora, BM25 and Chroma indexes, one Retriever protocol. Imports no other project package.

Heavy engines (bm25s, chromadb, torch) load lazily, on first use of the class that needs them.
"""

import importlib
from typing import Any

_LAZY = {"BM25Index": "bm25", "RankBM25Index": "bm25", "BuildSummary": "build",
         "build_index": "build", "open_index": "build", "CORPUS_KINDS": "corpus",
         "iter_corpus": "corpus", "CorpusError": "jsonstream", "Passage": "passage",
         "Retriever": "protocol", "ChromaIndex": "chroma", "IndexMismatchError": "chroma",
         "HybridRetriever": "hybrid"}
"""Every name loads on first use: a sandbox worker imports `retrieval.passage` alone and has
no numpy (its import surface is an allowlist, see `harnesses.sandbox.imports`)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(name)


__all__ = [
    "BM25Index", "BuildSummary", "CORPUS_KINDS", "ChromaIndex", "CorpusError", "HybridRetriever",
    "IndexMismatchError", "Passage", "RankBM25Index", "Retriever", "build_index", "iter_corpus",
    "open_index",
]
