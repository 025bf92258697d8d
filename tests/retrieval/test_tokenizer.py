import pytest

from harness_learning.retrieval.tokenizer import IdMapper, Tokenizer


def test_stemming_and_stopwords_are_configurable():
    text = "The runners and the running of the races"
    assert Tokenizer().terms(text) == ["runner", "run", "race"]
    assert Tokenizer(stemmer=None).terms(text) == ["runners", "running", "races"]
    assert Tokenizer(stemmer=None, stopwords=None).terms(text) == [
        "the", "runners", "and", "the", "running", "of", "the", "races"]


def test_settings_round_trip_gives_the_same_tokens():
    tok = Tokenizer(stemmer="english", stopwords="en")
    again = Tokenizer.from_settings(tok.settings())
    text = "Héloïse wrote letters; Abélard's replies (1132) survive."
    assert again.terms(text) == tok.terms(text)
    with pytest.raises(ValueError, match="stemmer"):
        Tokenizer(stemmer="klingon")


def test_id_mapper_agrees_with_terms():
    tok = Tokenizer()
    mapper = IdMapper(tok)
    texts = ["Cats chase the mice", "a mouse chased cats", "THE the The"]
    inverse = {}
    for t in texts:
        for term, i in zip(tok.terms(t), mapper.ids(t), strict=True):
            assert inverse.setdefault(i, term) == term
    assert mapper.ids("THE the The") == []
    assert mapper.vocab[tok.term("cats")] == mapper.ids("cats")[0]


def test_batch_ids_number_terms_by_first_occurrence():
    """The vocabulary order, and so the index files, must not depend on hashing or runs."""
    tok = Tokenizer()
    texts = ["zebras graze", "apples and zebras", "", "graze apples quietly"]
    ids, doc = IdMapper(tok).batch_ids(texts)
    mapper = IdMapper(tok)
    mapper.batch_ids(texts)
    assert list(mapper.vocab) == ["zebra", "graze", "appl", "quiet"]
    assert ids.tolist() == [0, 1, 2, 0, 1, 2, 3]
    assert doc.tolist() == [0, 0, 1, 1, 3, 3, 3]
