"""Build an index directory from a corpus, and open one as a Retriever.

A build writes into `OUT.partial` and renames it over OUT only when complete, so a failed
build (bad input, interrupt) leaves an existing index intact. Chroma ingestion is resumable:
re-running the same build continues a `.partial` directory, or extends a finished index in
place (e.g. a larger `limit`), embedding only passages Chroma does not hold yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from harness_learning.retrieval.bm25 import BM25Builder, BM25Index, RankBM25Index, index_text
from harness_learning.retrieval.corpus import iter_corpus, iter_hotpotqa_wiki
from harness_learning.retrieval.embedding import MODEL_DIM, MODEL_NAME
from harness_learning.retrieval.jsonstream import CorpusError
from harness_learning.retrieval.manifest import Manifest
from harness_learning.retrieval.protocol import Retriever
from harness_learning.retrieval.store import PassageStore, StoreWriter
from harness_learning.retrieval.tokenizer import Tokenizer

BACKENDS = ("bm25", "chroma", "both")
STAGE_MARK = "stage.json"
HOTPOTQA_ABSTRACTS = 5_233_329
"""Passages in HotpotQA's Wikipedia abstracts as downloaded (the `.tar.bz2` archive): a build
of the archive is checked against memory for this many from its first batch."""


@dataclass
class BuildSummary:
    out_dir: str
    passages: int
    backends: list[str]
    seconds: float
    bytes_on_disk: int
    chroma_count: int | None = None


def _fingerprint(kind: str, path: Path) -> dict:
    if not path.exists():
        raise CorpusError(f"{path}: no such file or directory")
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    h = hashlib.blake2b(digest_size=8)
    for f in files:
        st = f.stat()
        h.update(f"{f}|{st.st_size}|{st.st_mtime_ns}".encode())
    return {"kind": kind, "input": str(path.resolve()), "fingerprint": h.hexdigest()}


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def default_workers() -> int:
    """Tokenising processes for a BM25 build: one per CPU, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


SAMPLE_SHARDS = 3


def expected_size(kind: str, src: Path) -> int | None:
    """Passages the abstracts are expected to hold before they are read: the archive's known
    count, or for a directory of shards, the first shards' passages per byte times all its
    bytes (the dump's shards are cut by size, so they hold alike). Other corpora: unknown."""
    if kind != "hotpotqa-wiki":
        return None
    if src.is_file():
        whole = src.name.endswith((".tar.bz2", ".tar", ".tgz", ".tar.gz"))
        return HOTPOTQA_ABSTRACTS if whole else None
    shards = sorted(p for p in src.rglob("*") if p.is_file() and not p.name.startswith("."))
    sample = shards[:SAMPLE_SHARDS]
    read = sum(p.stat().st_size for p in sample)
    if len(shards) <= len(sample) or not read:
        return None  # a few shards: the build reads them all before it could know more
    counted = sum(1 for shard in sample for _ in iter_hotpotqa_wiki(shard))
    return round(counted * sum(p.stat().st_size for p in shards) / read)


def _write_store(kind: str, src: Path, stage: Path, tok: Tokenizer, bm25: bool, k1: float,
                 b: float, progress: bool, workers: int,
                 expected: int | None = None) -> tuple[int, dict | None]:
    from tqdm.auto import tqdm

    writer = StoreWriter(stage)
    expected = expected or expected_size(kind, src)
    builder = BM25Builder(tok, k1, b, workers, expected_passages=expected) if bm25 else None
    try:
        try:
            for rec in tqdm(iter_corpus(kind, src), desc="read corpus", unit="psg",
                            disable=not progress):
                writer.add(rec["title"], rec["text"])
                if builder is not None:
                    builder.add(rec["title"], rec["text"])
        finally:
            writer.close()
        if len(writer) == 0:
            raise CorpusError(f"{src}: empty corpus (no passages)")
        settings = builder.save(stage) if builder is not None else None
    finally:
        if builder is not None:
            builder.close()
    return len(writer), settings


def _swap_into_place(stage: Path, out: Path) -> None:
    """Replace `out` with `stage`; the old index is only removed once the new one is in place."""
    old = out.with_name(out.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        os.rename(out, old)
    try:
        os.rename(stage, out)
    except OSError:
        if old.exists():
            os.rename(old, out)
        raise
    if old.exists():
        shutil.rmtree(old)


def _existing(out: Path) -> Manifest | None:
    try:
        return Manifest.load(out)
    except (FileNotFoundError, ValueError):
        return None


def build_index(corpus_kind: str, input_path: str | Path, out_dir: str | Path,
                backend: str = "bm25", *, stemmer: str | None = "english",
                stopwords: str | None = "en", k1: float = 1.5, b: float = 0.75,
                limit: int | None = None, device: str = "cpu", chroma_url: str | None = None,
                batch_size: int = 256, progress: bool = True,
                workers: int | None = None,
                expected_passages: int | None = None) -> BuildSummary:
    """Build (or resume) an index of `input_path` into `out_dir`; see the module docstring.
    `workers`: processes tokenising for BM25 (default: one per CPU, at most 8). They are
    spawned, and spawned processes import the calling script again: a script that calls this
    needs the usual `if __name__ == "__main__":` guard (or workers=1).
    `expected_passages`: the corpus's size if known, so a BM25 build that cannot fit in the
    available memory stops after its first batch (`retrieval.build_memory.MemoryShortError`), not
    once it has read enough to know."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    t0 = time.perf_counter()
    src, out = Path(input_path), Path(out_dir).resolve()
    corpus = _fingerprint(corpus_kind, src)
    tok = Tokenizer(stemmer, stopwords)
    want_bm25, want_chroma = backend in ("bm25", "both"), backend in ("chroma", "both")
    old = _existing(out)
    if old is None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out}: exists and is not an index directory; refusing to replace it")
    if want_chroma and old and old.embedding and (
            old.embedding.get("model"), old.embedding.get("dim")) != (MODEL_NAME, MODEL_DIM):
        raise _mismatch(out, old)
    same = old is not None and old.corpus == corpus and old.tokenizer == tok.settings()
    if same and (not want_bm25 or "bm25" in old.backends) and want_chroma:
        target, m = out, old  # extend Chroma in place; the store and BM25 stay as they are
    else:
        target = out.with_name(out.name + ".partial")
        m = _stage(corpus_kind, src, target, corpus, tok, want_bm25, k1, b, progress,
                   workers or default_workers(), expected_passages)
    if want_chroma:
        m = _add_chroma(target, m, corpus, limit, device, chroma_url, batch_size, progress)
    m.build_s = round(time.perf_counter() - t0, 2)
    m.save(target)
    (target / STAGE_MARK).unlink(missing_ok=True)
    if target != out:
        _swap_into_place(target, out)
    return BuildSummary(str(out), m.passages, m.backends, m.build_s, dir_size(out),
                        (m.chroma or {}).get("count"))


def _mismatch(out: Path, old: Manifest) -> Exception:
    from harness_learning.retrieval.chroma import IndexMismatchError

    e = old.embedding or {}
    return IndexMismatchError(
        f"{out}: the index was embedded with {e.get('model')!r} (dim {e.get('dim')}), this build "
        f"embeds with {MODEL_NAME!r} (dim {MODEL_DIM}); build into a new directory")


def _stage(kind: str, src: Path, stage: Path, corpus: dict, tok: Tokenizer, want_bm25: bool,
           k1: float, b: float, progress: bool, workers: int,
           expected: int | None = None) -> Manifest:
    """Reuse a matching `.partial` directory, or write the store (and BM25) into a fresh one."""
    mark = stage / STAGE_MARK
    key = {"corpus": corpus, "tokenizer": tok.settings(), "bm25": want_bm25, "k1": k1, "b": b}
    if mark.is_file() and json.loads(mark.read_text())["key"] == key:
        return Manifest.load(stage)
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        n, bm25 = _write_store(kind, src, stage, tok, want_bm25, k1, b, progress, workers,
                               expected)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    m = Manifest(corpus=corpus, passages=n, tokenizer=tok.settings(),
                 backends=["bm25"] if bm25 else [], bm25=bm25)
    m.save(stage)
    mark.write_text(json.dumps({"key": key}))
    return m


def _add_chroma(target: Path, m: Manifest, corpus: dict, limit: int | None, device: str,
                url: str | None, batch_size: int, progress: bool) -> Manifest:
    from harness_learning.retrieval.chroma import COLLECTION, ingest

    name = COLLECTION if not url else "hl-" + corpus["fingerprint"]
    count = ingest(target, PassageStore(target), text_of=index_text, limit=limit,
                   batch_size=batch_size, device=device, url=url, collection=name,
                   progress=progress)
    m.embedding = {"model": MODEL_NAME, "dim": MODEL_DIM, "device": device}
    m.chroma = {"collection": name, "url": url, "count": count, "limit": limit}
    if "chroma" not in m.backends:
        m.backends = [*m.backends, "chroma"]
    return m


def open_index(path: str | Path, backend: str = "auto", *, device: str = "cpu",
               chroma_url: str | None = None) -> Retriever:
    """Open an index directory: `auto` (bm25 if present, else chroma), `bm25`, `chroma`,
    `hybrid` (RRF of both) or `rank-bm25` (the in-memory reference, small corpora)."""
    path = Path(path)
    m = Manifest.load(path)
    tok = Tokenizer.from_settings(m.tokenizer)
    if backend == "auto":
        backend = "bm25" if "bm25" in m.backends else "chroma"
    need = {"bm25": ["bm25"], "chroma": ["chroma"], "hybrid": ["bm25", "chroma"], "rank-bm25": []}
    if backend not in need:
        raise ValueError(f"unknown backend {backend!r}; choose from auto, {', '.join(need)}")
    missing = [x for x in need[backend] if x not in m.backends]
    if missing:
        raise ValueError(f"{path}: backend {backend!r} needs {missing}, the index has {m.backends}")
    if backend == "rank-bm25":
        k1, b = (m.bm25 or {}).get("k1", 1.5), (m.bm25 or {}).get("b", 0.75)
        return RankBM25Index(path, tok, k1, b)
    if "chroma" in need[backend] and (m.embedding or {}).get("model") != MODEL_NAME:
        raise _mismatch(path, m)
    parts: list[Retriever] = []
    if "bm25" in need[backend]:
        index = BM25Index(path, tok)
        if len(index) != m.passages or len(index.store) != m.passages:  # files of another build
            raise ValueError(f"{path}: the manifest lists {m.passages} passages but the BM25 "
                             f"index holds {len(index)} and the passage store {len(index.store)}: "
                             "rebuild the index")
        parts.append(index)
    if "chroma" in need[backend]:
        from harness_learning.retrieval.chroma import ChromaIndex

        c = m.chroma or {}
        parts.append(ChromaIndex(path, url=chroma_url or c.get("url"), device=device,
                                 collection=c.get("collection", "passages")))
    if backend == "hybrid":
        from harness_learning.retrieval.hybrid import HybridRetriever

        return HybridRetriever(parts)
    return parts[0]
