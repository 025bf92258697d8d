"""The query path's scatter (`np.add.at` over native-width indices, block by block on a large
index) against the plain one."""

import numpy as np
import pytest

from harness_learning.retrieval import build_index, open_index

pytestmark = pytest.mark.slow


def _plain_top10(idx, query):
    """The previous path: fancy-index `+=` with the stored int32 ids, then a full sort."""
    scores = np.zeros(len(idx), dtype=np.float32)
    for t in idx.term_ids(query):
        a, b = int(idx._indptr[t]), int(idx._indptr[t + 1])
        scores[idx._indices[a:b]] += idx._data[a:b]
    order = np.lexsort((np.arange(len(scores)), -scores))[:10]
    order = order[scores[order] > 0]
    return order, scores[order]


def test_top10_is_bit_identical_to_the_plain_path(tmp_path, data_dir):
    from harness_learning_lab.bench.retrieval import fit, fitted

    corpus = fitted.FittedCorpus(fit.fit_samples(data_dir), 4000)
    src = corpus.write_jsonl(tmp_path / "fitted.jsonl")
    build_index("jsonl", src, tmp_path / "ix", "bm25", progress=False)
    idx = open_index(tmp_path / "ix")
    queries = corpus.queries(60) + corpus.zipf_queries(20) + ["x0 x0 x1", "nothing here"]
    blocked = open_index(tmp_path / "ix")
    blocked.BLOCK = 256  # 4,000 passages in 16 blocks: the path of a large index
    long_lists = 0
    for q in queries:
        want_ids, want_vals = _plain_top10(idx, q)
        for index in (idx, blocked):
            ids, vals = index.top(q, 10)
            assert ids.tolist() == want_ids.tolist(), q
            np.testing.assert_array_equal(vals, want_vals)  # equal bits, not approximately
        long_lists += sum(idx._indptr[t + 1] - idx._indptr[t] for t in idx.term_ids(q)) * 16 >= len(idx)
    assert long_lists > 20  # the bound-and-select branch ran, not only the small-query one
