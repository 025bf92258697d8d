"""The Retriever protocol: what `tools.search` is bound to."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness_learning.retrieval.passage import Passage


@runtime_checkable
class Retriever(Protocol):
    """Anything that maps a query to its k best passages, best first."""

    def search(self, query: str, k: int = 5) -> list[Passage]: ...

    def search_batch(self, queries: list[str], k: int = 5) -> list[list[Passage]]: ...
