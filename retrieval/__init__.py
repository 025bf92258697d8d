"""Corpora, BM25 and Chroma indexes, one Retriever protocol. Imports no other project package."""

from retrieval.passage import Passage
from retrieval.protocol import Retriever

__all__ = ["Passage", "Retriever"]
