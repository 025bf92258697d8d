"""A synthetic corpus and queries drawn from a `fit.CorpusFit`, at any passage count.

Words are `x` followed by a rank in a 30-symbol alphabet without vowels: the index's English
stemmer leaves every such word as it is and no stop word looks like one, so each rank is
exactly one index term (`x` + base-36 would merge about 3.5% of 2M ranks under the stemmer).

Tokens are drawn i.i.d. by rank: the sample's measured shares for its head ranks, a fitted
Zipf tail r^-s beyond them. The vocabulary's size is chosen for the target corpus: the number
V of ranks for which such a draw of the corpus's tokens is expected to meet as many distinct
terms as the fitted Heaps law predicts at that many tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from harness_learning_lab.bench.retrieval.fit import QUANTILES, CorpusFit

ALPHABET = "0123456789bcdfghjklmnpqrstvwxz"
SEED = 1234
MAX_VOCAB = 20_000_000


def word(rank: int) -> str:
    """The synthetic word of a 0-based rank."""
    base, out = len(ALPHABET), ""
    while True:
        rank, r = divmod(rank, base)
        out = ALPHABET[r] + out
        if rank == 0:
            return "x" + out


def probs(fit: CorpusFit, vocab: int) -> np.ndarray:
    """Rank probabilities: the sample's measured head shares, then the fitted Zipf tail,
    continuous where they meet, over `vocab` ranks in all (normalised)."""
    head = np.asarray(fit.head_shares[:vocab], dtype=float)
    h = len(head)
    tail = head[-1] * (np.arange(h + 1, max(vocab, h) + 1, dtype=float) / h) ** -fit.zipf_s
    p = np.concatenate([head, tail])
    return p / p.sum()


def expected_distinct(p: np.ndarray, tokens: float) -> float:
    """Distinct ranks expected among `tokens` i.i.d. draws from `p` (Poisson approximation)."""
    return float(np.sum(-np.expm1(-tokens * p)))


def choose_vocab(fit: CorpusFit, passages: int) -> int:
    """Ranks so that the draw's distinct terms at `passages` match Heaps' law there."""
    tokens = passages * fit.mean_length
    target = fit.heaps_vocab(tokens)
    # A draw of T tokens meets at most T terms: a few T ranks always suffice.
    lo = max(fit.vocab // 4, 16)
    hi = max(min(MAX_VOCAB, 4 * int(tokens)), lo + 1)
    if expected_distinct(probs(fit, hi), tokens) < target:
        return hi  # the law's tail is too thin to reach it: the largest vocabulary allowed
    while hi / lo > 1.01:
        mid = int(np.sqrt(lo * hi))
        if expected_distinct(probs(fit, mid), tokens) < target:
            lo = mid
        else:
            hi = mid
    return hi


class FittedCorpus:
    """The passages and queries of a fitted corpus of `n` passages, reproducible from `seed`."""

    def __init__(self, fit: CorpusFit, n: int, seed: int = SEED) -> None:
        self.fit, self.n, self.seed = fit, n, seed
        self.vocab = choose_vocab(fit, n)
        self.p = probs(fit, self.vocab)

    def checks(self) -> dict:
        """Goodness of the generator against the sample it was fitted on, and its size at n:
        distinct terms and the queries' posting share at the sample's size, model vs real."""
        f = self.fit
        tokens_n = self.n * f.mean_length
        lengths = np.asarray(f.length_quantiles)
        ranks = [r for qs in f.query_ranks for r in qs if r > 0]
        share = 1.0 - np.mean((1.0 - self.p[np.asarray(ranks) - 1, None]) ** lengths[None, :], axis=1)
        per_q = sum(len([r for r in qs if r > 0]) for qs in f.query_ranks) / max(len(f.query_ranks), 1)
        return {"vocab_ranks": self.vocab,
                "tail_token_share": round(float(self.p[len(f.head_shares):].sum()), 4),
                "distinct_at_sample_model": round(expected_distinct(self.p, f.tokens)),
                "distinct_at_sample_real": f.vocab,
                "distinct_at_n_heaps": f.heaps_vocab(tokens_n),
                "distinct_at_n_model": round(expected_distinct(self.p, tokens_n)),
                "query_postings_share_model": round(float(share.mean() * per_q), 4),
                "query_postings_share_real": f.query_postings_share}

    def lengths(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """`m` passage lengths from the fitted quantiles (linear between them), at least 1."""
        u = rng.random(m)
        return np.maximum(np.rint(np.interp(u, QUANTILES, self.fit.length_quantiles)), 1).astype(np.int64)

    def texts(self, chunk: int = 20_000) -> Iterator[str]:
        """Each passage's text, one space between words."""
        rng = np.random.default_rng(self.seed)
        names = np.array([word(i) for i in range(self.vocab)], dtype=object)
        cdf = np.cumsum(self.p)
        for start in range(0, self.n, chunk):
            lens = self.lengths(rng, min(chunk, self.n - start))
            ids = np.minimum(np.searchsorted(cdf, rng.random(int(lens.sum()))), self.vocab - 1)
            words = names[ids].tolist()
            end = 0
            for length in lens.tolist():
                yield " ".join(words[end:end + length])
                end += length

    def write_jsonl(self, path: str | Path) -> Path:
        """The passages as `{title, text}` lines (empty titles: the fitted lengths include them)."""
        path = Path(path)
        with open(path, "w", encoding="utf-8") as f:
            for text in self.texts():
                f.write('{"title": "", "text": "' + text + '"}\n')
        return path

    def queries(self, n: int, seed: int | None = None) -> list[str]:
        """`n` sample questions drawn with replacement, each term replaced by the synthetic
        word of its frequency rank; a term the sample corpora lack gets a rank drawn
        log-uniformly above the sample's vocabulary (it is rare there too)."""
        rng = np.random.default_rng(self.seed + 1 if seed is None else seed)
        pool = [qs for qs in self.fit.query_ranks if qs]
        lo, hi = np.log(self.fit.vocab + 1), np.log(max(self.vocab, self.fit.vocab + 2))
        out = []
        for i in rng.integers(0, len(pool), size=n).tolist():
            ranks = [r if r > 0 else int(np.exp(rng.uniform(lo, hi))) for r in pool[i]]
            out.append(" ".join(word(r - 1) for r in ranks))
        return out

    def zipf_queries(self, n: int, words: int = 8) -> list[str]:
        """`n` queries of `words` distinct words drawn from the fitted rank law itself."""
        rng, cdf = np.random.default_rng(self.seed + 2), np.cumsum(self.p)
        out = []
        for _ in range(n):
            ranks = np.minimum(np.searchsorted(cdf, rng.random(4 * words)), self.vocab - 1)
            _, first = np.unique(ranks, return_index=True)
            out.append(" ".join(word(int(r)) for r in ranks[np.sort(first)][:words]))
        return out
