"""A synthetic corpus with a Zipf vocabulary, reproducible from its seed.

Words are `x<base36 rank>`, so no stop-word list or stemmer alters them and the vocabulary
stays exactly `vocab` words; rank r is drawn with probability proportional to 1 / r.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

VOCAB, WORDS, SEED = 50_000, 60, 1234


def _base36(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        i, r = divmod(i, 36)
        out = digits[r] + out
        if i == 0:
            return out


def vocabulary(vocab: int = VOCAB) -> np.ndarray:
    return np.array(["x" + _base36(i) for i in range(vocab)], dtype=object)


def _probs(vocab: int) -> np.ndarray:
    p = 1.0 / np.arange(1, vocab + 1)
    return p / p.sum()


def passages(n: int, *, vocab: int = VOCAB, words: int = WORDS, seed: int = SEED,
             chunk: int = 20_000) -> Iterator[tuple[str, str]]:
    """(title, text) pairs: ~`words` words each (uniform in [words*2/3, words*4/3])."""
    rng = np.random.default_rng(seed)
    names, cdf = vocabulary(vocab), np.cumsum(_probs(vocab))
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        lens = rng.integers(words * 2 // 3, words * 4 // 3 + 1, size=m)
        ids = np.minimum(np.searchsorted(cdf, rng.random(int(lens.sum()))), vocab - 1)
        ends = np.cumsum(lens)
        for j in range(m):
            yield f"p{start + j}", " ".join(names[ids[ends[j] - lens[j]: ends[j]]])


def queries(n: int, *, words: int = 8, vocab: int = VOCAB, seed: int = SEED + 1) -> list[str]:
    """`n` queries of `words` distinct words drawn from the same Zipf distribution."""
    rng = np.random.default_rng(seed)
    names, p = vocabulary(vocab), _probs(vocab)
    return [" ".join(names[rng.choice(vocab, size=words, replace=False, p=p)]) for _ in range(n)]


def write_jsonl(path: str | Path, n: int, **kw) -> Path:
    """Write the first `n` passages as `{title, text}` JSON lines (the `jsonl` corpus kind)."""
    path = Path(path)
    with open(path, "w", encoding="utf-8") as f:
        for title, text in passages(n, **kw):
            f.write(json.dumps({"title": title, "text": text}) + "\n")
    return path
