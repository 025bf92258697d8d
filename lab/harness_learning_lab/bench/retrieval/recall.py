"""Recall of gold supporting paragraphs on the real MuSiQue and 2Wiki samples.

Each dataset file gives its own closed corpus (the `musique` / `2wiki` corpus kinds) and its
questions' gold evidence: MuSiQue `paragraphs[is_supporting]` as (title, text) pairs, 2Wiki
`supporting_facts` titles. Recall@k is the share of a question's gold found in its top k,
averaged over questions.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harness_learning.retrieval.build import build_index, open_index
from harness_learning.retrieval.jsonstream import iter_json_records

KS = (2, 5, 10)
DATASETS = {"musique": "musique/musique_train.json", "2wiki": "2wikimultihopqa/train_slice.json"}


def gold(kind: str, path: Path) -> list[tuple[str, set]]:
    """(question, gold keys): (title, text) pairs for MuSiQue, titles for 2Wiki."""
    out = []
    for _, rec in iter_json_records(path):
        if kind == "musique":
            keys = {(p["title"].strip(), p["paragraph_text"].strip())
                    for p in rec["paragraphs"] if p.get("is_supporting")}
        else:
            keys = {title.strip() for title, _ in rec["supporting_facts"]}
        out.append((rec["question"], keys))
    return out


def recall(kind: str, hits_per_q: list, golds: list[set], k: int) -> float:
    total = 0.0
    for hits, keys in zip(hits_per_q, golds, strict=True):
        got = {(p.title, p.text) if kind == "musique" else p.title for p in hits[:k]}
        total += len(got & keys) / max(len(keys), 1)
    return total / max(len(golds), 1)


def _head(path: Path, n: int, out: Path) -> Path:
    """The first n question records of a dataset file, as a JSON list."""
    records = [rec for _, (_, rec) in zip(range(n), iter_json_records(path), strict=False)]
    body = json.dumps(records)
    if not out.is_file() or out.read_text(encoding="utf-8") != body:  # keep the cache's key
        out.write_text(body, encoding="utf-8")
    return out


def run(data_dir: str | Path, backends: tuple[str, ...] = ("bm25", "chroma", "hybrid"),
        device: str = "cpu", cache: str | Path | None = None, questions: int | None = None,
        log=print) -> list[dict]:
    """One row per (dataset, backend): passages, questions and recall@2/5/10.

    With `cache`, indexes live in `cache/<dataset>` and a re-run reuses them (the build is
    resumable, so Chroma embeds nothing twice); CPU embedding is the slow part. With
    `questions`, only the first N questions and their own closed corpus are used.
    """
    rows = []
    with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
        tmp = Path(cache or tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        for kind, rel in DATASETS.items():
            path = Path(data_dir) / rel
            if questions:
                path = _head(path, questions, Path(tmp) / f"{kind}-first{questions}.json")
            need_chroma = any(b in ("chroma", "hybrid") for b in backends)
            log(f"indexing the {kind} closed corpus ({'bm25+chroma' if need_chroma else 'bm25'}) ...")
            s = build_index(kind, path, Path(tmp) / kind, "both" if need_chroma else "bm25",
                            device=device, progress=False)
            qs = gold(kind, path)
            for backend in backends:
                r = open_index(Path(tmp) / kind, backend, device=device)
                hits = r.search_batch([q for q, _ in qs], max(KS))
                row = {"dataset": kind, "backend": backend, "passages": s.passages,
                       "questions": len(qs)}
                row.update({f"recall@{k}": round(recall(kind, hits, [g for _, g in qs], k), 3)
                            for k in KS})
                rows.append(row)
    return rows
