"""The sample fit behind `bench bm25 --fit-samples`, on a slice of a real sample corpus."""

import json
from itertools import islice

import numpy as np
import pytest

from harness_learning.retrieval.bm25 import index_text
from harness_learning.retrieval.corpus import iter_corpus
from harness_learning.retrieval.tokenizer import Tokenizer
from harness_learning_lab.bench.retrieval import fit, fitted


@pytest.fixture(scope="module")
def slice_fit(data_dir):
    """The fit of the first 400 MuSiQue corpus passages and the first 40 questions."""
    tok = Tokenizer()
    recs = islice(iter_corpus("musique", data_dir / "musique" / "musique_train_corpus.json"), 400)
    docs = [tok.terms(index_text(r["title"], r["text"])) for r in recs]
    qs = json.loads((data_dir / "musique" / "musique_train.json").read_text())[:40]
    return fit.fit(docs, [tok.terms(q["question"]) for q in qs]), docs


def test_fit_parameters_are_in_a_sane_range(slice_fit):
    f, docs = slice_fit
    assert f.passages == 400 and f.tokens == sum(map(len, docs))
    assert 0.5 < f.zipf_s < 2.5 and f.zipf_r2 > 0.9
    assert 0.3 < f.heaps_beta < 1.0 and f.heaps_r2 > 0.9
    assert f.heaps_vocab(f.tokens) == pytest.approx(f.vocab, rel=0.25)
    assert np.all(np.diff(f.length_quantiles) >= 0)
    assert f.length_at(0.5) == np.median([len(d) for d in docs])
    assert sum(f.head_shares) < 1.0 and f.head_shares == sorted(f.head_shares, reverse=True)
    assert f.query_postings_share > 0 and len(f.query_ranks) == 40


def test_a_drawn_corpus_has_the_fitted_lengths_and_one_term_a_word(slice_fit):
    f, _ = slice_fit
    corpus = fitted.FittedCorpus(f, 3000)
    checks = corpus.checks()  # the vocabulary grows with the corpus as Heaps' law says
    assert corpus.vocab > f.vocab
    assert checks["distinct_at_n_model"] == pytest.approx(checks["distinct_at_n_heaps"], rel=0.05)
    texts = list(corpus.texts())
    assert len(texts) == 3000 and texts == list(fitted.FittedCorpus(f, 3000).texts())
    lengths = np.array([len(t.split()) for t in texts])
    for q in (0.1, 0.5, 0.9):
        assert np.quantile(lengths, q) == pytest.approx(f.length_at(q), rel=0.1, abs=2)
    tok = Tokenizer()
    words = sorted({w for t in texts[:300] for w in t.split()})
    assert tok.terms(" ".join(words)) == words  # no stop word, no stemming merges two ranks


def test_sample_queries_keep_each_terms_frequency_rank(slice_fit):
    f, _ = slice_fit
    corpus = fitted.FittedCorpus(f, 3000)
    qs = corpus.queries(50)
    known = {" ".join(fitted.word(r - 1) for r in ranks) for ranks in f.query_ranks
             if ranks and all(ranks)}
    assert len(qs) == 50 and any(q in known for q in qs)
    assert fitted.word(0) == "x0" and len({fitted.word(i) for i in range(5000)}) == 5000


def test_sample_queries_without_the_fit_is_one_line_and_exit_2():
    from typer.testing import CliRunner

    from harness_learning.cli import app

    result = CliRunner().invoke(app, ["bench", "bm25", "--queries-from-samples", "--no-recall"])
    assert result.exit_code == 2
    assert "add --fit-samples" in result.output and result.output.count("\n") == 1
