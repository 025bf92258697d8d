"""BM25 over a memory-mapped bm25s index, scored like `rank_bm25.BM25Okapi(k1, b, epsilon=0)`.

The build streams: each passage becomes (term id, tf) pairs in flat arrays, never a Python
list per document, so 5.23M passages fit a 24 GiB machine. Scores are then computed with
bm25s' own ATIRE term-frequency and Robertson idf formulas and saved in bm25s' CSC layout
(`bm25s.BM25.load(mmap=True)` opens it). Zero entries (terms in over half the corpus have
idf 0) are dropped, which shortens the longest posting lists.

At query time bm25s' dense top-k (argpartition over all N scores, mostly zeros) dominates, so
`search` selects among the non-zero scores only, and adds each query term's postings with
`np.add.at` over native-width indices: the same top k bit for bit, in about half the time of
fancy-index `+=` over the stored int32 indices (the scatter is most of a query's time). Over
more than two million passages a query is scored one cache-sized block of passages at a time
(`BM25Index._top_blocked`), which saves another third.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness_learning.retrieval import build_memory
from harness_learning.retrieval.passage import Passage
from harness_learning.retrieval.store import PassageStore
from harness_learning.retrieval.tokenizer import IdMapper, Tokenizer

METHOD, IDF_METHOD = "atire", "robertson"
SUBDIR = "bm25"


def index_text(title: str, text: str) -> str:
    """What BM25 indexes for a passage: the title matters for multi-hop entity lookups."""
    return f"{title}\n{text}" if title else text


class BM25Builder:
    """Collects (term, tf) pairs passage by passage, then writes the bm25s index.

    With `workers` > 1, a corpus of more than one batch is tokenised by a pool of processes
    (`retrieval._parallel`); the index files are identical to a serial build's."""

    BATCH = 4096

    def __init__(self, tokenizer: Tokenizer, k1: float = 1.5, b: float = 0.75,
                 workers: int = 1, *, expected_passages: int | None = None,
                 available: int | None = None) -> None:
        """`expected_passages`: the corpus's size when known, so the memory check
        (`retrieval.build_memory`) projects the whole build from its first batch; `available`:
        bytes the build may use (default: the machine's available memory now)."""
        self.tokenizer, self.k1, self.b, self.workers = tokenizer, k1, b, workers
        self.expected = expected_passages or 0
        self.available = build_memory.available_bytes() if available is None else available
        self._mapper = IdMapper(tokenizer)
        self._terms, self._tfs = array("i"), array("i")
        self._lens, self._nnz = array("i"), array("i")
        self._pending: list[str] = []
        self._parallel = None
        self._flushed = False

    def add(self, title: str, text: str) -> None:
        self._pending.append(index_text(title, text))
        if len(self._pending) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        texts, self._pending = self._pending, []
        if not self._flushed and self.workers > 1 and len(texts) >= self.BATCH:
            from harness_learning.retrieval._parallel import ParallelTokenizer

            self._parallel = ParallelTokenizer(self.tokenizer, self._mapper.vocab, self.workers)
        self._flushed = True
        if self._parallel is None:
            if texts:
                self._count(*self._mapper.batch_ids(texts), len(texts))
            return
        for batch in self._parallel.submit(texts) if texts else ():
            self._count(*batch)

    def _finish(self) -> None:
        """Tokenise what is still pending or queued, and stop the workers."""
        self._flush()
        if self._parallel is not None:
            try:
                for batch in self._parallel.drain():
                    self._count(*batch)
            finally:
                self._parallel.close()
                self._parallel = None

    def close(self) -> None:
        """Stop the workers of an abandoned build (a finished `save` already has)."""
        if self._parallel is not None:
            self._parallel.close()
            self._parallel = None

    def _count(self, ids: np.ndarray, doc: np.ndarray, n: int) -> None:
        """Count (passage, term) pairs of one tokenised batch in one vectorised step."""
        pairs, tfs = np.unique((doc << 32) | ids, return_counts=True)
        self._terms.frombytes((pairs & 0xFFFFFFFF).astype(np.int32).tobytes())
        self._tfs.frombytes(tfs.astype(np.int32).tobytes())
        self._lens.frombytes(np.bincount(doc, minlength=n).astype(np.int32).tobytes())
        self._nnz.frombytes(np.bincount(pairs >> 32, minlength=n).astype(np.int32).tobytes())
        self._check_memory()

    def _check_memory(self) -> None:
        """Stop before the peak when the corpus (as expected, or as read so far) cannot fit."""
        seen = len(self._lens)
        if not seen:
            return
        passages = max(self.expected, seen)
        build_memory.require(passages, len(self._terms) / seen,
                       build_memory.projected_vocab(len(self._mapper.vocab), seen, passages),
                       self.workers, self.available, projected=passages > seen)

    def __len__(self) -> int:
        queued = self._parallel.pending if self._parallel is not None else 0
        return len(self._lens) + len(self._pending) + queued

    def _matrix(self):
        """The passage x term score matrix in CSC form, zeros dropped."""
        import scipy.sparse as sp
        from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

        n, vocab = len(self._lens), len(self._mapper.vocab)
        terms = np.frombuffer(self._terms, dtype=np.int32)
        lens = np.frombuffer(self._lens, dtype=np.int32)
        nnz = np.frombuffer(self._nnz, dtype=np.int32)
        df = np.bincount(terms, minlength=vocab)
        idf_fn = _select_idf_scorer(IDF_METHOD)
        uniq = np.unique(df)
        idf_u = np.array([idf_fn(int(d), N=n) if d else 0.0 for d in uniq], dtype=np.float32)
        idf = idf_u[np.searchsorted(uniq, df)]
        avg_len = float(lens.mean()) if n else 0.0
        tfc = _select_tfc_scorer(METHOD)(
            tf_array=np.frombuffer(self._tfs, dtype=np.int32).astype(np.float32),
            l_d=np.repeat(lens.astype(np.float32), nnz),
            l_avg=np.float32(max(avg_len, 1e-9)),
            k1=np.float32(self.k1),
            b=np.float32(self.b),
        )
        tfc *= idf[terms]
        indptr = np.zeros(n + 1, dtype=np.int32 if len(terms) < 2**31 - 1 else np.int64)
        np.cumsum(nnz, out=indptr[1:])
        csr = sp.csr_matrix((tfc, terms, indptr), shape=(n, vocab))
        del tfc
        csr.eliminate_zeros()
        csc = csr.tocsc()
        csc.sort_indices()  # postings by passage id: the query path adds them block by block
        return csc, n, avg_len

    def save(self, directory: str | Path) -> dict:
        """Write `directory/bm25/` and return the settings the manifest records."""
        import bm25s

        self._finish()
        csc, n, avg_len = self._matrix()
        bm = bm25s.BM25(k1=self.k1, b=self.b, method=METHOD, idf_method=IDF_METHOD)
        bm.scores = {
            "data": csc.data.astype(np.float32, copy=False),
            "indices": csc.indices.astype(np.int32, copy=False),
            "indptr": csc.indptr.astype(np.int64, copy=False),
            "num_docs": n,
        }
        bm.vocab_dict = self._mapper.vocab
        bm.nonoccurrence_array = None
        bm.save(Path(directory) / SUBDIR, show_progress=False)
        return {"k1": self.k1, "b": self.b, "method": METHOD, "idf_method": IDF_METHOD,
                "vocab": len(self._mapper.vocab), "avg_len": avg_len, "nnz": int(csc.nnz)}


def top_k(scores: np.ndarray, candidates: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best candidates, best first, ties broken by lower id (deterministic)."""
    vals = scores[candidates]
    if len(candidates) > k:
        kth = np.partition(vals, len(vals) - k)[len(vals) - k]
        keep = vals >= kth  # every tie at the k-th place, so the id tie-break is exact
        candidates, vals = candidates[keep], vals[keep]
    order = np.lexsort((candidates, -vals))[:k]
    return candidates[order], vals[order]


class BM25Index:
    """A Retriever over a built index directory; safe to share across threads."""

    BLOCK = 1 << 20
    """Passages whose scores (4 MiB, cache-sized) a query on an index of over two blocks
    adds all its terms into before it moves to the next block (`_top_blocked`)."""

    def __init__(self, directory: str | Path, tokenizer: Tokenizer, store: PassageStore | None = None):
        import bm25s

        self.dir = Path(directory)
        self.tokenizer = tokenizer
        self.store = store or PassageStore(self.dir)
        self.engine = bm25s.BM25.load(self.dir / SUBDIR, mmap=True)
        s = self.engine.scores
        self._data, self._indices, self._indptr = s["data"], s["indices"], s["indptr"]
        self._n = int(s["num_docs"])
        self._vocab = self.engine.vocab_dict

    def __len__(self) -> int:
        return self._n

    def term_ids(self, query: str) -> list[int]:
        vocab = self._vocab
        return [vocab[t] for t in self.tokenizer.terms(query) if t in vocab]

    def _slices(self, query: str) -> list[tuple[int, int]]:
        """(start, end) of each query term's postings, in query order, repeats kept."""
        p = self._indptr
        return [(int(p[t]), int(p[t + 1])) for t in self.term_ids(query) if p[t + 1] > p[t]]

    def _add(self, scores: np.ndarray, slices: list[tuple[int, int]]) -> None:
        """Add each term's postings into `scores`, in query order for every passage.

        A passage appears once in a term's postings, so adding them one by one in order is
        bit for bit what fancy-index `+=` gives. numpy >= 1.25's unbuffered `add.at` over
        native-width indices is the fast way: ~1.8 ns a posting against ~4.8 ns for `+=`
        with the stored int32 indices (1M-passage index, numpy 2.4)."""
        for a, b in slices:
            np.add.at(scores, self._indices[a:b].astype(np.intp), self._data[a:b])

    def _exact(self, slices: list[tuple[int, int]], docs: np.ndarray) -> np.ndarray:
        """Scores of the sorted passage ids `docs`, found by binary search in each posting
        list and added in query order in float32: bit for bit what `scores` gives them."""
        acc = np.zeros(len(docs), dtype=np.float32)
        for a, b in slices:
            post = self._indices[a:b]
            pos = np.minimum(np.searchsorted(post, docs), b - a - 1)
            hit = np.flatnonzero(post[pos] == docs)
            acc[hit] += self._data[a + pos[hit]]
        return acc

    def _top_blocked(self, slices: list[tuple[int, int]],
                     k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The top k of a large index, scored one `BLOCK` of passages at a time, or None.

        The bound (the k-th best exact score among the rarest terms' passages, as in
        `_candidates`) is found first; then each block's scores are added into one small
        array that stays in cache, and its passages at or above the bound are kept before
        the array is cleared for the next block. No N-long array is allocated or scanned."""
        # Fewer probes than `_candidates` reads: each costs a binary search per term here.
        probe = np.unique(np.concatenate(self._rarest(slices, max(16 * k, 256))))
        exact = self._exact(slices, probe)
        if np.count_nonzero(exact) < k:
            return None
        bound = exact[np.argpartition(exact, len(exact) - k)[len(exact) - k]]
        lists = [(self._indices[a:b], self._data[a:b]) for a, b in slices]
        # Postings are sorted by id; edges of the ids' own dtype, or numpy copies each list.
        edges = np.arange(0, self._n + self.BLOCK, self.BLOCK).astype(self._indices.dtype)
        cuts = [np.searchsorted(ids, edges) for ids, _ in lists]
        buf, ids_out, vals_out = np.zeros(self.BLOCK, dtype=np.float32), [], []
        for j in range(len(edges) - 1):
            base = int(edges[j])
            for (ids, vals), c in zip(lists, cuts, strict=True):
                lo, hi = int(c[j]), int(c[j + 1])
                if hi > lo:
                    np.add.at(buf, np.subtract(ids[lo:hi], base, dtype=np.intp), vals[lo:hi])
            hit = np.flatnonzero(buf >= bound)
            ids_out.append(hit + base)
            vals_out.append(buf[hit])
            buf.fill(0.0)
        cand = np.concatenate(ids_out)  # ascending, so local order is id order for ties
        local, vals = top_k(np.concatenate(vals_out), np.arange(len(cand)), k)
        return cand[local], vals

    def _rarest(self, slices: list[tuple[int, int]], budget: int) -> list[np.ndarray]:
        """About `budget` passage ids from the shortest posting lists: their k-th best score
        is a lower bound of the true k-th best (any subset gives one)."""
        picked = []
        for a, b in sorted(slices, key=lambda s: s[1] - s[0]):
            picked.append(self._indices[a:a + min(b - a, budget)])
            budget -= b - a
            if budget <= 0:
                break
        return picked

    def scores(self, query: str, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(dense scores, candidate ids): every passage scoring > 0, or with k > 0 a subset
        that surely holds the top k."""
        slices = self._slices(query)
        scores = np.zeros(self._n, dtype=np.float32)
        self._add(scores, slices)
        return scores, self._candidates(scores, slices, k)

    def _candidates(self, scores: np.ndarray, slices: list[tuple[int, int]], k: int) -> np.ndarray:
        """Passages that can be in the top k, without sorting or partitioning all N scores.

        The k-th best score among the rarest terms' postings is a lower bound of the true k-th
        best, so `scores >= bound` keeps every top-k passage and few others.
        """
        if not slices:  # only terms with idf 0 (in over half the passages): nothing scores
            return np.zeros(0, dtype=np.int64)
        total = sum(b - a for a, b in slices)
        if total * 16 < self._n:
            return np.unique(np.concatenate([self._indices[a:b] for a, b in slices]))
        if k > 0:
            sub = scores[np.unique(np.concatenate(self._rarest(slices, max(32 * k, 2048))))]
            if len(sub) >= k:
                bound = np.partition(sub, len(sub) - k)[len(sub) - k]
                if bound > 0:
                    return np.flatnonzero(scores >= bound)
        return np.flatnonzero(scores)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best (ids, scores), best first, ties by lower id."""
        if k > 0 and self._n > 2 * self.BLOCK:
            slices = self._slices(query)
            if sum(b - a for a, b in slices) * 16 >= self._n:
                found = self._top_blocked(slices, k)
                if found is not None:
                    return found
        scores, cand = self.scores(query, k)
        if k <= 0 or len(cand) == 0:
            return cand[:0], scores[:0]
        return top_k(scores, cand, k)

    def search(self, query: str, k: int = 5) -> list[Passage]:
        ids, vals = self.top(query, k)
        out = []
        for i, v in zip(ids.tolist(), vals.tolist(), strict=True):
            title, text = self.store.get(i)
            out.append(Passage(title, text, float(v), str(i)))
        return out

    def search_batch(self, queries: Sequence[str], k: int = 5) -> list[list[Passage]]:
        return [self.search(q, k) for q in queries]


class RankBM25Index:
    """rank-bm25's BM25Okapi over the same store and tokenizer: a reference for small corpora."""

    MAX_PASSAGES = 300_000

    def __init__(self, directory: str | Path, tokenizer: Tokenizer, k1: float = 1.5, b: float = 0.75,
                 store: PassageStore | None = None):
        from rank_bm25 import BM25Okapi

        self.tokenizer = tokenizer
        self.store = store or PassageStore(directory)
        if len(self.store) > self.MAX_PASSAGES:
            raise ValueError(
                f"{directory}: rank-bm25 holds every passage in RAM and scans all of them per "
                f"query; {len(self.store)} passages is over its {self.MAX_PASSAGES} limit, use bm25")
        docs = [tokenizer.terms(index_text(t, x)) for t, x in self.store]
        self.engine = BM25Okapi(docs, k1=k1, b=b, epsilon=0)

    def search(self, query: str, k: int = 5) -> list[Passage]:
        scores = self.engine.get_scores(self.tokenizer.terms(query))
        cand = np.flatnonzero(scores)
        if k <= 0 or len(cand) == 0:
            return []
        ids, vals = top_k(scores, cand, k)
        return [Passage(*self.store.get(int(i)), float(v), str(int(i))) for i, v in zip(ids, vals, strict=True)]

    def search_batch(self, queries: Sequence[str], k: int = 5) -> list[list[Passage]]:
        return [self.search(q, k) for q in queries]
