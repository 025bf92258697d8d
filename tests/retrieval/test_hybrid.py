import pytest

from harness_learning.retrieval import HybridRetriever, Passage
from harness_learning.retrieval.hybrid import rrf


class _Fixed:
    """A retriever with a fixed ranking: enough to test the fusion arithmetic alone."""

    def __init__(self, titles):
        self.hits = [Passage(t, f"text of {t}", 10.0 - i, t) for i, t in enumerate(titles)]
        self.calls = []

    def search(self, query, k=5):
        return self.search_batch([query], k)[0]

    def search_batch(self, queries, k=5):
        self.calls.append(k)
        return [self.hits[:k] for _ in queries]


def test_rrf_rewards_agreement_between_lists():
    a = _Fixed(["A", "B", "C"]).hits
    b = _Fixed(["B", "D", "A"]).hits
    fused = rrf([a, b], k=4)
    assert [p.title for p in fused] == ["B", "A", "D", "C"]  # 2+1 beats 1+3 beats 2 beats 3
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert {p.title for p in fused} == {"A", "B", "C", "D"}


def test_hybrid_asks_each_member_for_depth_and_returns_k():
    r1, r2 = _Fixed(list("ABCDEFG")), _Fixed(list("GFEDCBA"))
    h = HybridRetriever([r1, r2], depth=5)
    hits = h.search("q", 3)
    assert len(hits) == 3 and r1.calls == [5] and r2.calls == [5]
    assert h.search_batch(["q", "q"], 3) == [hits, hits]
    with pytest.raises(ValueError):
        HybridRetriever([])
