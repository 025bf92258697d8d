"""The benchmark machinery on a tiny corpus (the real figures come from `harness-learn bench bm25`)."""

import pytest

from harness_learning_lab.bench.retrieval import recall, report, scale, synthetic

pytestmark = pytest.mark.slow


def test_synthetic_corpus_is_reproducible_and_zipfian():
    a = list(synthetic.passages(300))
    assert a == list(synthetic.passages(300))
    assert a != list(synthetic.passages(300, seed=7))
    words = [w for _, t in a for w in t.split()]
    assert 40 <= len(words) / 300 <= 80
    top = words.count("x0") / len(words)
    assert 0.05 < top < 0.15  # rank 1 has p = 1 / H(50000), about 0.09
    assert all(len(q.split()) == 8 for q in synthetic.queries(20))


def test_small_scale_run_agrees_with_rank_bm25(tmp_path):
    r = scale.run(passages=3000, queries=20, ref_passages=1500, ref_queries=10,
                  workdir=str(tmp_path), log=lambda m: None)
    assert r["top10_scores_identical"] == 1.0
    assert r["top10_agreement"] >= 0.9  # ties at the 10th place may pick other ids
    assert r["passages"] == 3000 and len(r["scaling"]) == 3
    assert r["projection"]["passages"] == 5_233_329
    assert "EXTRAPOLATED" in report.scale_table(r)


def test_recall_counts_gold_paragraphs(data_dir):
    golds = recall.gold("musique", data_dir / "musique" / "musique_train.json")
    assert len(golds) == 100 and all(len(g) >= 2 for _, g in golds)
    from harness_learning.retrieval import Passage

    q, g = golds[0]
    hit = [Passage(t, x) for t, x in sorted(g)]
    assert recall.recall("musique", [hit], [g], 10) == 1.0
    assert recall.recall("musique", [hit[:1]], [g], 10) == pytest.approx(1 / len(g))
