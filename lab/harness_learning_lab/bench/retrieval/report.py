"""Render the BM25 benchmark and the recall rows as plain-text tables."""

from __future__ import annotations


def _title(r: dict) -> str:
    n, corpus = r["passages"], r.get("corpus")
    if not corpus:
        return (f"BM25 on a synthetic Zipf corpus ({n:,} passages of ~60 words, 50k vocabulary,"
                f" seed 1234; 8-word queries)")
    q = ("sample questions mapped to the fitted ranks" if corpus["queries_from_samples"]
         else "8-word queries from the fitted law")
    return (f"BM25 on a corpus fitted to the QA samples ({n:,} passages, "
            f"{corpus['checks']['vocab_ranks']:,} ranks, seed 1234; {r['queries']:,} timed {q}, "
            f"{corpus['distinct_queries']} distinct)")


def scale_table(r: dict) -> str:
    ref = r["rank_bm25"]
    pr = r["projection"]
    cpu_label = f"build time, CPU incl. {r.get('build_workers', 1)} workers (s)"
    lines = [
        _title(r),
        f"{'measure':<44}{'value':>16}",
        f"{'build time, wall (s)':<44}{r['build_s']:>16}",
        f"{cpu_label:<44}{r['build_cpu_s']:>16}",
        f"{'  (machine load average at build start)':<44}{r['load_avg_at_build']:>16}",
        f"{'index size on disk (GiB)':<44}{r['index_gib']:>16}",
        f"{'peak RSS, build process + workers (GiB)':<44}{r['peak_rss_gib']:>16}",
        f"{'query latency p50 / p95 / p99 (ms, top-10)':<44}"
        f"{r['p50_ms']:>7} / {r['p95_ms']} / {r['p99_ms']}",
        f"{'query CPU time p50 / p99 (ms)':<44}{r['p50_cpu_ms']:>7} / {r['p99_cpu_ms']}",
        f"{'  (machine load average at query start)':<44}{r['load_avg_at_queries']:>16}",
    ]
    for s in r["scaling"]:
        lines.append(f"{'  at ' + format(s['passages'], ','):<20}{'build s / RSS GiB / p50 ms':<24}"
                     f"{s['build_s']:>7} / {s['peak_rss_gib']} / {s['p50_ms']}")
    lines += [
        f"rank-bm25 reference on the first {ref['passages']:,} passages, {ref['queries']} queries:",
        f"{'  build (s) / peak RSS (GiB)':<44}{ref['build_s']:>7} / {ref['peak_rss_gib']}",
        f"{'  p50 (ms), measured':<44}{ref['p50_ms']:>16}",
        f"{'  p50 CPU time (ms), measured':<44}{ref['p50_cpu_ms']:>16}",
        f"{'  p50 (ms), EXTRAPOLATED linearly to ' + format(r['passages'], ','):<44}"
        f"{ref['p50_ms_extrapolated_to_passages']:>16}",
        f"{'  ours p50 (ms) on the same subset':<44}{ref['ours_p50_ms_same_subset']:>16}",
        f"{'speedup per query (vs extrapolated rank-bm25)':<44}{r['speedup_vs_rank_bm25']:>15}x",
        f"{'speedup per query (same subset, measured)':<44}{r['speedup_same_subset']:>15}x",
        f"{'top-10 id agreement with rank-bm25':<44}{r['top10_agreement']:>16}",
        f"{'queries with identical top-10 scores':<44}{r['top10_scores_identical']:>16}",
    ]
    if pr:
        lines += [
            f"PROJECTION to {pr['passages']:,} passages (linear fit of the measured sizes):",
            f"{'  build (s) / peak RSS (GiB)':<44}{pr['build_s']:>7} / {pr['peak_rss_gib']}",
            f"{'  p50 latency (ms) / index size (GiB)':<44}{pr['p50_ms']:>7} / {pr['index_gib']}",
        ]
    return "\n".join(lines)


def fit_table(corpus: dict) -> str:
    """The fit to the sample corpora and how the generator matches it (goodness lines)."""
    f, c = corpus["fit"], corpus["checks"]
    q = f["length_quantiles"]
    return "\n".join([
        f"Fit to the QA sample corpora ({f['passages']:,} passages, {f['tokens']:,} terms after the "
        f"index's tokenizer, {f['vocab']:,} distinct; {f['questions']} questions)",
        f"  rank-frequency: measured shares for the {f['head_ranks']:,} ranks seen >= 5 times, "
        f"then Zipf s = {f['zipf_s']} (fitted on ranks {f['zipf_ranks'][0]:,}-"
        f"{f['zipf_ranks'][1]:,}, log-log R^2 {f['zipf_r2']})",
        f"  vocabulary growth (Heaps): V = {f['heaps_k']} * T^{f['heaps_beta']} (R^2 {f['heaps_r2']}); "
        f"at this corpus {c['distinct_at_n_heaps']:,} terms, the generator {c['distinct_at_n_model']:,} "
        f"({c['vocab_ranks']:,} ranks, {c['tail_token_share']:.0%} of tokens beyond the head)",
        f"  passage length (terms): p10 {q['p10']:.0f}, p50 {q['p50']:.0f}, p90 {q['p90']:.0f}, "
        f"p99 {q['p99']:.0f} (drawn from the empirical quantiles); lognormal mu {f['lognormal_mu']}, "
        f"sigma {f['lognormal_sigma']}, KS distance {f['lognormal_ks']}",
        f"  goodness: query terms' summed posting share at the sample's size, generator "
        f"{c['query_postings_share_model']} vs real {c['query_postings_share_real']}; distinct "
        f"terms at the sample's size, generator {c['distinct_at_sample_model']:,} vs real "
        f"{c['distinct_at_sample_real']:,} (the i.i.d. tail is heavier than a small sample's)",
    ])


def recall_table(rows: list[dict]) -> str:
    head = f"{'dataset':<9}{'backend':<9}{'passages':>9}{'questions':>10}{'R@2':>7}{'R@5':>7}{'R@10':>7}"
    out = ["Recall of gold supporting paragraphs (real samples, closed corpora)", head]
    for r in rows:
        out.append(f"{r['dataset']:<9}{r['backend']:<9}{r['passages']:>9}{r['questions']:>10}"
                   f"{r['recall@2']:>7}{r['recall@5']:>7}{r['recall@10']:>7}")
    return "\n".join(out)
