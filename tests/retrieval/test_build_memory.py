"""A BM25 build short of memory stops early with one line naming its estimated peak and the
memory available, instead of being killed by the kernel at its peak. The check is driven by a
small fake "available" figure over real passages: no 5.23M build runs here."""

from __future__ import annotations

import bz2
import json
import re

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.retrieval import build_index, build_memory
from harness_learning.retrieval.bm25 import BM25Builder
from harness_learning.retrieval.build import HOTPOTQA_ABSTRACTS, expected_size
from harness_learning.retrieval.build_memory import MemoryShortError
from harness_learning.retrieval.tokenizer import Tokenizer

GIB = 2**30


def real_passages(musique_file, n: int) -> list[tuple[str, str]]:
    """`n` (title, text) pairs from MuSiQue's paragraphs, repeated as needed."""
    records = json.loads(musique_file.read_text(encoding="utf-8"))
    paragraphs = [(p["title"], p["paragraph_text"]) for r in records for p in r["paragraphs"]]
    return [paragraphs[i % len(paragraphs)] for i in range(n)]


def test_a_build_of_the_abstracts_short_of_memory_stops_after_its_first_batch(musique_file):
    builder = BM25Builder(Tokenizer("english", "en"), expected_passages=HOTPOTQA_ABSTRACTS,
                          available=2 * GIB)
    batch = real_passages(musique_file, BM25Builder.BATCH)
    with pytest.raises(MemoryShortError) as err:
        for title, text in batch:
            builder.add(title, text)
    said = str(err.value)
    assert len(builder._lens) == BM25Builder.BATCH  # stopped after one batch, before the peak
    assert "\n" not in said
    assert said.startswith("a BM25 index of 5,233,329 passages (expected, ")
    terms = len(builder._terms) / BM25Builder.BATCH
    vocab = build_memory.projected_vocab(len(builder._mapper.vocab), BM25Builder.BATCH,
                                   HOTPOTQA_ABSTRACTS)
    need = build_memory.peak_bytes(HOTPOTQA_ABSTRACTS, terms, vocab)
    assert need > 4 * GIB  # the pairs alone are gigabytes at this size
    assert f"needs about {build_memory.gib(need)} at its peak, and 2.0 GiB is available" in said
    assert said.endswith("a machine with more memory, or index part of the corpus")


def test_the_same_batch_with_enough_memory_goes_on(musique_file):
    builder = BM25Builder(Tokenizer("english", "en"), expected_passages=HOTPOTQA_ABSTRACTS,
                          available=10**15)
    for title, text in real_passages(musique_file, BM25Builder.BATCH + 1):
        builder.add(title, text)
    assert len(builder) == BM25Builder.BATCH + 1


def test_the_estimate_grows_with_passages_terms_vocabulary_and_workers():
    one = build_memory.peak_bytes(1_000_000, 50, 2_000_000)
    assert build_memory.peak_bytes(2_000_000, 50, 2_000_000) > one
    assert build_memory.peak_bytes(1_000_000, 60, 2_000_000) > one
    assert build_memory.peak_bytes(1_000_000, 50, 2_000_000, workers=2) > one
    assert build_memory.peak_bytes(1_000_000, 50, 2_000_000, workers=1) == one
    assert build_memory.projected_vocab(1000, 100, 100) == 1000
    assert 1000 < build_memory.projected_vocab(1000, 100, 1000) < 10_000  # sublinear (Heaps)
    with pytest.raises(MemoryShortError, match=r"use fewer tokenising workers \(1 needs about"):
        build_memory.require(5_000_000, 50, 5_000_000, 4, GIB, projected=True)


def test_the_abstracts_size_is_known_from_the_archive_or_projected_from_shards(tmp_path):
    archive = tmp_path / "abstracts.tar.bz2"
    archive.write_bytes(b"")
    assert expected_size("hotpotqa-wiki", archive) == HOTPOTQA_ABSTRACTS
    assert expected_size("jsonl", archive) is None
    shards = tmp_path / "AA"
    shards.mkdir()
    for n in range(8):  # shards cut by size, as the dump's are: 20 abstracts each
        lines = "".join(json.dumps({"id": str(i), "title": f"Title {n} {i}",
                                    "text": [f"Abstract {n} {i} is about a place."]}) + "\n"
                        for i in range(20))
        (shards / f"wiki_{n:02d}.bz2").write_bytes(bz2.compress(lines.encode()))
    assert 8 * 20 * 0.9 <= expected_size("hotpotqa-wiki", shards) <= 8 * 20 * 1.1
    for n in range(3, 8):
        (shards / f"wiki_{n:02d}.bz2").unlink()
    assert expected_size("hotpotqa-wiki", shards) is None  # as few as it samples: read them


def test_index_build_short_of_memory_is_one_line_and_loses_nothing(tmp_path, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"alpha beta gamma {i}"})
                              + "\n" for i in range(50)))
    monkeypatch.setattr(build_memory, "available_bytes", lambda: 64 * 2**20)
    with pytest.raises(MemoryShortError, match=r"^a BM25 index of 50 passages \(read so far, "):
        build_index("jsonl", corpus, tmp_path / "ix", "bm25", progress=False, workers=1)
    res = CliRunner().invoke(app, ["index", "build", "--corpus", "jsonl", "--input", str(corpus),
                                   "--out", str(tmp_path / "ix"), "--workers", "1"])
    assert res.exit_code == 2
    (line,) = [x for x in res.output.splitlines() if "error" in x]
    assert re.match(r"error: a BM25 index of 50 passages .* needs about 12\d MiB at its peak, "
                    r"and 64 MiB is available", line), line
    assert not list(tmp_path.glob("ix*"))  # neither the index nor a partial one
    monkeypatch.undo()
    build_index("jsonl", corpus, tmp_path / "ix", "bm25", progress=False, workers=1)
    before = {p.name: p.read_bytes() for p in (tmp_path / "ix").rglob("*") if p.is_file()}
    monkeypatch.setattr(build_memory, "available_bytes", lambda: 64 * 2**20)
    with pytest.raises(MemoryShortError):
        build_index("jsonl", corpus, tmp_path / "ix", "bm25", progress=False, workers=1)
    after = {p.name: p.read_bytes() for p in (tmp_path / "ix").rglob("*") if p.is_file()}
    assert after == before and sorted(tmp_path.glob("ix*")) == [tmp_path / "ix"]  # kept whole


def test_a_containers_memory_limit_bounds_the_memory_available(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text(f"{4 * GIB}\n")
    (v2 / "memory.current").write_text(f"{3 * GIB}\n")
    (v2 / "memory.stat").write_text(f"anon 123\ninactive_file {GIB // 2}\n")
    assert build_memory.cgroup_room(v2) == GIB + GIB // 2  # the limit less use, cache reclaimable
    (v2 / "memory.max").write_text("max\n")
    assert build_memory.cgroup_room(v2) is None
    v1 = tmp_path / "v1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (v1 / "memory.usage_in_bytes").write_text(f"{GIB}\n")
    (v1 / "memory.stat").write_text("total_inactive_file 0\n")
    assert build_memory.cgroup_room(v1.parent) is None
    (v1 / "memory.limit_in_bytes").write_text(f"{2 * GIB}\n")
    assert build_memory.cgroup_room(v1.parent) == GIB
    assert build_memory.cgroup_room(tmp_path / "none") is None
