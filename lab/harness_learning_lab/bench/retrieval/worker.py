"""One measured step of the BM25 benchmark, run in its own process so peak RSS is honest.

    python -m harness_learning_lab.bench.retrieval.worker bm25 CORPUS.jsonl OUT_DIR NQ [Q.json]  # build + query
    python -m harness_learning_lab.bench.retrieval.worker rank-bm25 CORPUS.jsonl NQ [Q.json]     # the reference

Q.json, when given, is a JSON list of query strings (the first NQ are timed); else NQ
synthetic Zipf queries.

Prints one JSON object: timings, peak RSS and each query's top 10 (ids, scores).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

import numpy as np


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _cpu_s() -> float:
    """CPU time of this process and of its finished children (the build's tokenising workers)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


def _child_peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def _latencies(search, qs: list[str]) -> tuple[list[float], list, list[float]]:
    """Wall ms, hits and CPU ms per query; CPU time stays honest on a contended machine."""
    for q in qs[:5]:
        search(q)
    lat, tops, cpu = [], [], []
    for q in qs:
        t, c = time.perf_counter(), time.process_time()
        hits = search(q)
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        tops.append(hits)
    return lat, tops, cpu


def _queries(nq: int, path: str | None) -> list[str]:
    if path:
        with open(path, encoding="utf-8") as f:
            return json.load(f)[:nq]
    from harness_learning_lab.bench.retrieval.synthetic import queries

    return queries(nq)


def run_bm25(corpus: str, out: str, nq: int, queries_path: str | None = None) -> dict:
    from harness_learning.retrieval.build import build_index, default_workers, dir_size, open_index

    load = os.getloadavg()[0]
    with open(corpus, "rb") as f:  # one passage a line: the build checks memory for all of them
        expected = sum(1 for line in f if line.strip())
    t, c = time.perf_counter(), _cpu_s()
    s = build_index("jsonl", corpus, out, "bm25", progress=False, expected_passages=expected)
    build_s, build_cpu = time.perf_counter() - t, _cpu_s() - c
    build_peak = _peak_gib()
    workers = default_workers()
    # Peak RSS of the build: the process plus each tokenising worker at the largest one's peak.
    build_peak += (workers if workers > 1 else 0) * _child_peak_gib()
    idx = open_index(out, "bm25")
    qs = _queries(nq, queries_path)
    query_load = os.getloadavg()[0]
    lat, tops, cpu = _latencies(lambda q: idx.search(q, 10), qs)
    return {"passages": s.passages, "build_s": build_s, "build_cpu_s": build_cpu, "cpu_ms": cpu,
            "workers": workers, "query_load_avg": query_load,
            "load_avg": load, "peak_rss_gib": build_peak,
            "index_bytes": dir_size(out), "lat_ms": lat,
            "top10": [[[int(p.id), p.score] for p in hits] for hits in tops]}


def run_rank_bm25(corpus: str, nq: int, queries_path: str | None = None) -> dict:
    from rank_bm25 import BM25Okapi

    from harness_learning.retrieval.bm25 import index_text, top_k
    from harness_learning.retrieval.corpus import iter_corpus
    from harness_learning.retrieval.tokenizer import Tokenizer

    tok = Tokenizer()
    t = time.perf_counter()
    docs = [tok.terms(index_text(r["title"], r["text"])) for r in iter_corpus("jsonl", corpus)]
    engine = BM25Okapi(docs, k1=1.5, b=0.75, epsilon=0)
    build_s = time.perf_counter() - t

    def search(q: str):
        scores = engine.get_scores(tok.terms(q))
        ids, vals = top_k(scores, np.flatnonzero(scores), 10)
        return list(zip(ids.tolist(), vals.tolist(), strict=True))

    lat, tops, cpu = _latencies(search, _queries(nq, queries_path))
    return {"passages": len(docs), "build_s": build_s, "peak_rss_gib": _peak_gib(),
            "lat_ms": lat, "cpu_ms": cpu, "top10": tops}


def main(argv: list[str]) -> None:
    if argv[0] == "bm25":
        out = run_bm25(argv[1], argv[2], int(argv[3]), argv[4] if len(argv) > 4 else None)
    elif argv[0] == "rank-bm25":
        out = run_rank_bm25(argv[1], int(argv[2]), argv[3] if len(argv) > 3 else None)
    else:
        raise SystemExit(f"unknown step {argv[0]!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
