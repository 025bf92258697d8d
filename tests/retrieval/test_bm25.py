"""BM25 over a real closed corpus: scores equal rank-bm25's BM25Okapi(epsilon=0)."""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from harness_learning.retrieval import BM25Index, build_index, open_index
from harness_learning.retrieval.bm25 import index_text

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def index(musique_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("bm25") / "ix"
    build_index("musique", musique_file, out, "bm25", progress=False)
    return open_index(out)


@pytest.fixture(scope="module")
def questions(musique_file):
    return [r["question"] for r in json.loads(musique_file.read_text())][:40]


@pytest.fixture(scope="module")
def reference(index):
    docs = [index.tokenizer.terms(index_text(t, x)) for t, x in index.store]
    return BM25Okapi(docs, k1=1.5, b=0.75, epsilon=0)


def test_scores_equal_rank_bm25_on_the_same_tokens(index, reference, questions):
    assert isinstance(index, BM25Index)
    for q in questions + ["the of and", "psychology psychology journal"]:
        ours, _ = index.scores(q)
        ref = reference.get_scores(index.tokenizer.terms(q))
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
        engine = index.engine.get_scores(index.term_ids(q)) if index.term_ids(q) else ours
        np.testing.assert_allclose(engine, ref, rtol=1e-5, atol=1e-5)  # bm25s' own scorer too


def test_top_k_matches_a_full_sort(index, reference, questions):
    for q in questions:
        ref = reference.get_scores(index.tokenizer.terms(q))
        hits = index.search(q, 10)
        assert [p.score for p in hits] == pytest.approx(np.sort(ref)[::-1][:10], rel=1e-5)
        assert all(ref[int(p.id)] == pytest.approx(p.score, rel=1e-5) for p in hits)
        title, text = index.store.get(int(hits[0].id))
        assert (hits[0].title, hits[0].text) == (title, text)


def test_gold_paragraph_is_found(index, musique_file):
    rec = json.loads(musique_file.read_text())[0]
    gold = {p["title"] for p in rec["paragraphs"] if p["is_supporting"]}
    hits = index.search(rec["question"], 10)
    assert gold & {p.title for p in hits}


def test_index_is_memory_mapped(index):
    assert isinstance(index._data, np.memmap) and isinstance(index._indices, np.memmap)


def test_unknown_words_and_k_edge_cases(index):
    assert index.search("qwzxv plokm", 5) == []
    assert index.search("psychology", 0) == []
    assert len(index.search("journal", 3)) == 3
    assert index.search_batch(["journal", "qwzxv"], 2)[1] == []


def test_concurrent_threads_and_asyncio_tasks_agree(index, questions):
    expected = [index.search(q, 5) for q in questions]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda q: index.search(q, 5), questions)) == expected

    async def main():
        return await asyncio.gather(*(asyncio.to_thread(index.search, q, 5) for q in questions))

    assert asyncio.run(main()) == expected


def test_rank_bm25_backend_gives_the_same_hits(index):
    ref = open_index(index.dir, "rank-bm25")
    for q in ["first president of the association", "Journal of Mathematical Physics"]:
        a, b = index.search(q, 10), ref.search(q, 10)
        assert [p.id for p in a] == [p.id for p in b]
        assert [p.score for p in a] == pytest.approx([p.score for p in b], rel=1e-5)


def test_candidate_pruning_equals_a_full_sort_with_id_tie_break(tmp_path):
    from harness_learning_lab.bench.retrieval import synthetic

    src = synthetic.write_jsonl(tmp_path / "syn.jsonl", 3000)
    build_index("jsonl", src, tmp_path / "ix", "bm25", progress=False)
    idx = open_index(tmp_path / "ix")
    for q in synthetic.queries(100):
        scores, _ = idx.scores(q)
        full = np.lexsort((np.arange(len(scores)), -scores))[:10]
        full = full[scores[full] > 0]
        ids, vals = idx.top(q, 10)
        assert ids.tolist() == full.tolist()
        np.testing.assert_array_equal(vals, scores[full])
