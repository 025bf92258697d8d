"""A synthetic corpus's parameters, fitted to the real QA sample corpora after the index's tokenizer.

Why: BM25 query time is set by the posting-list lengths of the query's terms, so a scale figure
is only as good as the corpus's rank-frequency law, its vocabulary growth and its passage
lengths, and by how common the queries' terms are. The fit reads the three closed sample
corpora (`evals.samples.SAMPLE_CORPORA`) through `retrieval.tokenizer.Tokenizer` (stop words
dropped, stemmed, title included as the index does) and gives:

- the rank-frequency law: the measured token shares of the ranks seen at least `MIN_COUNT`
  times (the head, where query terms live), and beyond them a Zipf tail p(r) ~ r^-s whose
  exponent is fitted on the decade of ranks just above that noise floor;
- Heaps' law V(T) = K T^beta for distinct terms after T tokens (passages in seeded order);
- passage lengths (terms a passage) as empirical quantiles, with a lognormal fit reported;
- the sample questions' terms, as ranks of that same frequency order (`query_ranks`), so that
  synthetic queries hit posting lists as long as the real ones would.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

MIN_COUNT = 5
QUANTILES = np.linspace(0.0, 1.0, 201)


@dataclass
class CorpusFit:
    """Everything `fitted.FittedCorpus` needs to draw passages and queries at any size."""

    passages: int
    tokens: int
    vocab: int
    zipf_s: float
    zipf_r2: float
    zipf_ranks: tuple[int, int]
    head_shares: list[float] = field(repr=False)
    """Token share of each rank 1..len (those counted at least `MIN_COUNT` times)."""
    heaps_k: float
    heaps_beta: float
    heaps_r2: float
    length_quantiles: list[float]
    lognormal_mu: float
    lognormal_sigma: float
    lognormal_ks: float
    questions: int
    query_postings_share: float
    """Mean over questions of the summed document frequency of its terms, as a share of the
    passages: how much of the corpus a query's posting lists cover."""
    query_ranks: list[list[int]] = field(default_factory=list, repr=False)
    """Per sample question, its terms as 1-based frequency ranks; 0 for a term the corpora lack."""

    @property
    def mean_length(self) -> float:
        return self.tokens / max(self.passages, 1)

    def heaps_vocab(self, tokens: float) -> int:
        """Distinct terms expected after `tokens` tokens, by the fitted Heaps law."""
        return int(self.heaps_k * tokens ** self.heaps_beta)

    def summary(self) -> dict:
        d = asdict(self)
        d.pop("query_ranks")
        d["head_ranks"] = len(d.pop("head_shares"))
        d["length_quantiles"] = {f"p{int(q * 100)}": self.length_at(q) for q in (0.1, 0.5, 0.9, 0.99)}
        return d

    def length_at(self, q: float) -> float:
        return float(np.interp(q, QUANTILES, self.length_quantiles))


def sample_texts(data: Path) -> tuple[list[list[str]], list[list[str]]]:
    """(passages, questions) as term lists: the closed sample corpora, de-duplicated on
    (title, text), and every sample question, in file order."""
    from harness_learning.evals.samples import SAMPLE_CORPORA, SAMPLE_FILES
    from harness_learning.retrieval.bm25 import index_text
    from harness_learning.retrieval.corpus import iter_corpus
    from harness_learning.retrieval.jsonstream import iter_json_records
    from harness_learning.retrieval.tokenizer import Tokenizer

    tok = Tokenizer()
    seen: set[tuple[str, str]] = set()
    docs: list[list[str]] = []
    for kind, rel in SAMPLE_CORPORA.values():
        for rec in iter_corpus(kind, data / rel):
            key = (rec["title"], rec["text"])
            if key not in seen:
                seen.add(key)
                docs.append(tok.terms(index_text(rec["title"], rec["text"])))
    questions = [tok.terms(rec["question"]) for rel in SAMPLE_FILES.values()
                 for _, rec in iter_json_records(data / rel)]
    return docs, questions


def fit_zipf(freqs: np.ndarray, min_count: int = MIN_COUNT) -> tuple[float, float, int, int]:
    """(s, R^2, first rank, last rank) of log f = c - s log r over the decade of ranks just
    above the sample's noise floor (the last rank counted `min_count` times, and ten times
    fewer ranks), on 40 log-spaced ranks so that every part of the decade weighs the same."""
    f = np.sort(np.asarray(freqs, dtype=float))[::-1]
    hi = max(int(np.sum(f >= min_count)), 20)
    lo = max(hi // 10, 2)
    idx = np.unique(np.geomspace(lo, hi, 40).astype(int)) - 1
    x, y = np.log(idx + 1.0), np.log(f[idx])
    slope, icept = np.polyfit(x, y, 1)
    resid = y - (slope * x + icept)
    r2 = 1.0 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())
    return -float(slope), r2, lo, hi


def fit_heaps(docs: list[list[str]], seed: int = 0) -> tuple[float, float, float]:
    """(K, beta, R^2) of V = K T^beta over 30 log-spaced checkpoints of a seeded passage
    order, from 1% of the passages on: the growth's slope falls with size, and the fit is
    extrapolated upwards, so its first few passages must not set it."""
    order = np.random.default_rng(seed).permutation(len(docs))
    seen: set[str] = set()
    total, points = 0, []
    marks = set(np.unique(np.geomspace(max(len(docs) // 100, 1), len(docs), 30).astype(int)))
    for i, j in enumerate(order, 1):
        seen.update(docs[j])
        total += len(docs[j])
        if i in marks and total:
            points.append((total, len(seen)))
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    beta, logk = np.polyfit(x, y, 1)
    resid = y - (beta * x + logk)
    r2 = 1.0 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())
    return float(np.exp(logk)), float(beta), r2


def fit_lognormal(lengths: np.ndarray) -> tuple[float, float, float]:
    """(mu, sigma, Kolmogorov-Smirnov distance) of a lognormal on the positive lengths."""
    from scipy import stats

    pos = lengths[lengths > 0].astype(float)
    mu, sigma = float(np.log(pos).mean()), float(np.log(pos).std())
    ks = stats.kstest(pos, "lognorm", args=(sigma, 0, np.exp(mu))).statistic
    return mu, sigma, float(ks)


def fit(docs: list[list[str]], questions: list[list[str]]) -> CorpusFit:
    """The fit of term lists (passages) and the questions' terms as frequency ranks."""
    counts = Counter(t for d in docs for t in d)
    df = Counter(t for d in docs for t in set(d))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    rank_of = {t: i for i, (t, _) in enumerate(ranked, 1)}
    freqs = np.array([c for _, c in ranked])
    s, zr2, lo, hi = fit_zipf(freqs)
    k, beta, hr2 = fit_heaps(docs)
    lengths = np.array([len(d) for d in docs])
    mu, sigma, ks = fit_lognormal(lengths)
    return CorpusFit(
        passages=len(docs), tokens=int(lengths.sum()), vocab=len(counts),
        zipf_s=round(s, 4), zipf_r2=round(zr2, 4), zipf_ranks=(lo, hi),
        head_shares=(freqs[:hi] / freqs.sum()).tolist(),
        heaps_k=round(k, 4), heaps_beta=round(beta, 4), heaps_r2=round(hr2, 4),
        length_quantiles=[float(v) for v in np.quantile(lengths, QUANTILES)],
        lognormal_mu=round(mu, 4), lognormal_sigma=round(sigma, 4), lognormal_ks=round(ks, 4),
        questions=len(questions),
        query_postings_share=round(float(np.mean(
            [sum(df.get(t, 0) for t in qs) / len(docs) for qs in questions])), 4),
        query_ranks=[[rank_of.get(t, 0) for t in qs] for qs in questions])


def fit_samples(data: str | Path | None = None) -> CorpusFit:
    """The fit of the three sample corpora under `data` (default: `HARNESS_LEARNING_DATA`)."""
    if data is None:
        from harness_learning.evals.samples import data_dir

        data = data_dir()
    return fit(*sample_texts(Path(data)))
