"""The one tokenizer a BM25 index uses at build and at query time; its settings are saved.

Words are runs of two or more word characters (bm25s' default pattern), lower-cased, stop words dropped, then stemmed
with PyStemmer. A per-word cache makes the stemmer cost once per distinct word, which is what
makes tokenising a million passages fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PATTERN = r"(?u)\w\w+"  # a greedy run needs no \b anchors
_STOP = -1


def _stopword_set(name: str | None) -> frozenset[str]:
    if not name:
        return frozenset()
    from bm25s import stopwords

    table = {"en": "STOPWORDS_EN", "english": "STOPWORDS_EN", "en_plus": "STOPWORDS_EN_PLUS"}
    attr = table.get(name.lower(), f"STOPWORDS_{name.upper()}")
    if not hasattr(stopwords, attr):
        raise ValueError(f"unknown stop-word list {name!r}")
    return frozenset(getattr(stopwords, attr))


@dataclass
class Tokenizer:
    """Text -> term strings (`terms`) or vocabulary ids (`ids`); settings round-trip via dicts."""

    stemmer: str | None = "english"
    stopwords: str | None = "en"
    lower: bool = True
    pattern: str = PATTERN
    _re: re.Pattern = field(init=False, repr=False)
    _stop: frozenset = field(init=False, repr=False)
    _stem: object = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._re = re.compile(self.pattern)
        self._stop = _stopword_set(self.stopwords)
        self._stem = None
        if self.stemmer:
            import Stemmer

            if self.stemmer not in Stemmer.algorithms():
                raise ValueError(f"unknown stemmer {self.stemmer!r}; PyStemmer has {Stemmer.algorithms()}")
            self._stem = Stemmer.Stemmer(self.stemmer)
        self._term_of: dict[str, str | None] = {}

    def settings(self) -> dict:
        return {"stemmer": self.stemmer, "stopwords": self.stopwords, "lower": self.lower,
                "pattern": self.pattern}

    @classmethod
    def from_settings(cls, d: dict) -> Tokenizer:
        return cls(d.get("stemmer"), d.get("stopwords"), d.get("lower", True), d.get("pattern", PATTERN))

    def words(self, text: str) -> list[str]:
        return self._re.findall(text.lower() if self.lower else text)

    def term(self, word: str) -> str | None:
        """The index term for one word (None for a stop word), cached."""
        t = self._term_of.get(word, _STOP)
        if t is _STOP:
            t = None if word in self._stop else (self._stem.stemWord(word) if self._stem else word)
            self._term_of[word] = t
        return t

    def terms(self, text: str) -> list[str]:
        return [t for t in map(self.term, self.words(text)) if t is not None]


class _WordIds(dict):
    """word -> term id; a missing word is resolved by `miss`, which stores it."""

    def __init__(self, miss) -> None:
        super().__init__()
        self._miss_fn = miss

    def __missing__(self, word: str) -> int:
        return self._miss_fn(word)


class IdMapper:
    """Maps texts straight to term ids for the build, growing the vocabulary as it goes.

    `batch_ids` tokenises many texts with one regex pass over their concatenation (a NUL byte
    marks each boundary), so the per-passage Python cost is nearly gone.
    """

    _SEP = "\x00"

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tok = tokenizer
        self.vocab: dict[str, int] = {}
        self.terms: list[str] = []  # id -> term
        self._id_of = _WordIds(self._miss)
        self._id_of[self._SEP] = -3
        self._batch_re = re.compile(f"{tokenizer.pattern}|{self._SEP}")

    def _miss(self, word: str) -> int:
        term = self.tok.term(word)
        if term is None:
            tid = _STOP
        else:
            tid = self.vocab.get(term, _STOP)
            if tid == _STOP:
                tid = self.vocab[term] = len(self.terms)
                self.terms.append(term)
        self._id_of[word] = tid
        return tid

    def _map(self, words: list[str]) -> list[int]:
        """Ids of `words` in one C-level pass; a new word is looked up as it is first met, so
        the vocabulary (and so the index files) is the same on every run."""
        return list(map(self._id_of.__getitem__, words))

    def ids(self, text: str) -> list[int]:
        out = self._map(self.tok.words(text))
        return [i for i in out if i != _STOP] if _STOP in out else out

    def batch_ids(self, texts: list[str]):
        """(flat term ids as int64, passage index of each id): stop words already dropped."""
        import numpy as np

        sep = self._SEP
        joined = sep.join(t.replace(sep, " ") if sep in t else t for t in texts)
        if self.tok.lower:
            joined = joined.lower()
        words = self._batch_re.findall(joined)
        ids = np.fromiter(map(self._id_of.__getitem__, words), dtype=np.int64, count=len(words))
        boundary = ids == -3
        doc = np.cumsum(boundary)
        keep = ids >= 0
        return ids[keep], doc[keep]
