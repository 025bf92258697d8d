"""The BM25 scale benchmark: bm25s-backed `BM25Index` vs rank-bm25 on a synthetic Zipf corpus.

Each measured step runs in its own process (`retrieval.bench.worker`) so its peak RSS is its
own. rank-bm25 cannot hold 1M passages on a small machine (6.4 GB peak, 2.6 s per query), so
it runs on a subset with few queries; its 1M figures are extrapolated linearly and labelled so.
Top-10 agreement compares both engines on that same subset.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from harness_learning_lab.bench.retrieval import synthetic


def _step(*args: str) -> dict:
    env = dict(os.environ, TQDM_DISABLE="1", DISABLE_TQDM="1")
    proc = subprocess.run([sys.executable, "-m", "harness_learning_lab.bench.retrieval.worker", *args],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark step {args[0]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _prefix(src: Path, dst: Path, n: int) -> Path:
    with open(src, "rb") as f, open(dst, "wb") as g:
        for i, line in enumerate(f):
            if i >= n:
                break
            g.write(line)
    return dst


def _agreement(ours: list, ref: list) -> tuple[float, float]:
    """(mean overlap of the top-10 id sets, share of queries whose top-10 scores all match)."""
    overlap, same = [], []
    for a, b in zip(ours, ref, strict=True):
        ids_a, ids_b = {i for i, _ in a}, {i for i, _ in b}
        overlap.append(len(ids_a & ids_b) / max(len(ids_b), 1))
        sa, sb = [s for _, s in a], [s for _, s in b]
        same.append(len(sa) == len(sb) and np.allclose(sa, sb, rtol=1e-5, atol=1e-5))
    return float(np.mean(overlap)), float(np.mean(same))


def _fit(ns: list[int], ys: list[float], at: int) -> float:
    """Least-squares line through the measured points, read at `at`."""
    if len(ns) < 2:
        return ys[-1] * at / ns[-1]
    slope, icept = np.polyfit(np.asarray(ns, float), np.asarray(ys, float), 1)
    return float(slope * at + icept)


def _corpus(tmp: Path, passages: int, queries: int, fitted, sample_queries: bool,
            log) -> tuple[Path, str | None, dict | None]:
    """(corpus file, queries file or None, the fit's figures or None)."""
    if fitted is None:
        return synthetic.write_jsonl(tmp / "corpus.jsonl", passages), None, None
    from harness_learning_lab.bench.retrieval.fitted import FittedCorpus

    corpus = FittedCorpus(fitted, passages)
    path, mark = tmp / "corpus.jsonl", tmp / "corpus.json"
    key = json.dumps({"passages": passages, "seed": corpus.seed, "vocab": corpus.vocab,
                      "fit": fitted.summary()}, sort_keys=True)
    if path.is_file() and mark.is_file() and mark.read_text(encoding="utf-8") == key:
        log(f"reusing the {passages:,} fitted passages in {path}")
    else:  # the mark is written last: a half-written corpus is never reused
        mark.unlink(missing_ok=True)
        log(f"writing {passages:,} fitted passages ({corpus.vocab:,} ranks) ...")
        corpus.write_jsonl(path)
        mark.write_text(key, encoding="utf-8")
    qs = corpus.queries(queries) if sample_queries else corpus.zipf_queries(queries)
    qpath = tmp / "queries.json"
    qpath.write_text(json.dumps(qs), encoding="utf-8")
    return path, str(qpath), {"fit": fitted.summary(), "checks": corpus.checks(),
                              "queries_from_samples": sample_queries,
                              "distinct_queries": len(set(qs))}


def run(passages: int = 1_000_000, queries: int = 200, ref_passages: int = 100_000,
        ref_queries: int = 20, project_to: int = 5_233_329, workdir: str | None = None,
        log=print, *, fitted=None, sample_queries: bool = False, scaling: bool = True) -> dict:
    """Build and query at passages/4, /2 and full size (only full without `scaling`), run the
    reference, return the figures. `fitted` (a `fit.CorpusFit`) draws the corpus from the
    sample fit; `sample_queries` then times the sample questions mapped to its ranks."""
    tmp = Path(workdir or tempfile.mkdtemp(prefix="bm25bench-"))
    try:
        full, qfile, fit_figures = _corpus(tmp, passages, max(queries, ref_queries), fitted,
                                           sample_queries, log)
        qargs = [qfile] if qfile else []
        sizes = sorted({max(passages // 4, 1), max(passages // 2, 1), passages}) if scaling else [passages]
        runs = {}
        for n in sizes:
            src = full if n == passages else _prefix(full, tmp / f"c{n}.jsonl", n)
            log(f"building BM25 over {n:,} passages ...")
            runs[n] = _step("bm25", str(src), str(tmp / f"ix{n}"), str(queries), *qargs)
            if workdir is None or n != passages:  # a kept workdir keeps the full-size index
                shutil.rmtree(tmp / f"ix{n}", ignore_errors=True)
        ref_n = min(ref_passages, passages)
        ref_src = full if ref_n == passages else _prefix(full, tmp / f"r{ref_n}.jsonl", ref_n)
        log(f"rank-bm25 reference over {ref_n:,} passages, {ref_queries} queries ...")
        ref = _step("rank-bm25", str(ref_src), str(ref_queries), *qargs)
        ours_at_ref = _step("bm25", str(ref_src), str(tmp / "ixref"), str(ref_queries), *qargs)
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    out = _report(runs, ref, ours_at_ref, passages, ref_n, project_to)
    out["corpus"] = fit_figures
    return out


def _report(runs: dict, ref: dict, ours_ref: dict, n: int, ref_n: int, project_to: int) -> dict:
    big = runs[n]
    p50, p95, p99 = (float(np.percentile(big["lat_ms"], q)) for q in (50, 95, 99))
    ref_ms = float(np.median(ref["lat_ms"]))
    ours_ref_ms = float(np.median(ours_ref["lat_ms"]))
    ref_at_n = ref_ms * n / ref_n  # rank-bm25 scans every passage per query: linear in N
    overlap, same = _agreement(ours_ref["top10"], ref["top10"])
    ns = sorted(runs)
    p50s = [float(np.percentile(runs[m]["lat_ms"], 50)) for m in ns]
    return {
        "passages": n, "build_s": round(big["build_s"], 1),
        "build_cpu_s": round(big["build_cpu_s"], 1), "load_avg_at_build": round(big["load_avg"], 1),
        "build_workers": big.get("workers", 1),
        "index_gib": round(big["index_bytes"] / 2**30, 3),
        "peak_rss_gib": round(big["peak_rss_gib"], 2),
        "p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "p99_ms": round(p99, 2),
        "queries": len(big["lat_ms"]), "load_avg_at_queries": round(big.get("query_load_avg", 0.0), 1),
        "p50_cpu_ms": round(float(np.percentile(big["cpu_ms"], 50)), 2),
        "p99_cpu_ms": round(float(np.percentile(big["cpu_ms"], 99)), 2),
        "scaling": [{"passages": m, "build_s": round(runs[m]["build_s"], 1),
                     "peak_rss_gib": round(runs[m]["peak_rss_gib"], 2), "p50_ms": round(x, 2)}
                    for m, x in zip(ns, p50s, strict=True)],
        "rank_bm25": {"passages": ref_n, "queries": len(ref["lat_ms"]),
                      "build_s": round(ref["build_s"], 1), "p50_ms": round(ref_ms, 1),
                      "peak_rss_gib": round(ref["peak_rss_gib"], 2),
                      "p50_cpu_ms": round(float(np.percentile(ref["cpu_ms"], 50)), 1),
                      "p50_ms_extrapolated_to_passages": round(ref_at_n, 1),
                      "ours_p50_ms_same_subset": round(ours_ref_ms, 2)},
        "speedup_vs_rank_bm25": round(ref_at_n / p50, 1),
        "speedup_same_subset": round(ref_ms / ours_ref_ms, 1),
        "top10_agreement": round(overlap, 4), "top10_scores_identical": round(same, 4),
        "projection": None if len(ns) < 2 or n >= project_to else {
            "passages": project_to,
            "build_s": round(_fit(ns, [runs[m]["build_s"] for m in ns], project_to), 0),
            "peak_rss_gib": round(_fit(ns, [runs[m]["peak_rss_gib"] for m in ns], project_to), 1),
            "p50_ms": round(_fit(ns, p50s, project_to), 1),
            "index_gib": round(_fit(ns, [runs[m]["index_bytes"] / 2**30 for m in ns], project_to), 2)},
    }
