"""Tokenising in worker processes gives byte-identical BM25 index files."""

from __future__ import annotations

import filecmp
import json

import pytest

from harness_learning.retrieval import build
from harness_learning.retrieval.bm25 import BM25Builder
from harness_learning.retrieval.build import build_index, open_index
from harness_learning.retrieval.jsonstream import CorpusError
from harness_learning_lab.bench.retrieval import synthetic


class SmallBatches(BM25Builder):
    BATCH = 64  # many batches from a small corpus, so several are in flight at once


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(build, "BM25Builder", SmallBatches)


def test_parallel_build_equals_serial_build(tmp_path, small_batches):
    corpus = synthetic.write_jsonl(tmp_path / "c.jsonl", 1000, vocab=3000)
    with open(corpus, "a", encoding="utf-8") as f:  # words the synthetic vocabulary lacks
        f.write(json.dumps({"title": "Zebra crossing", "text": "The zebras were crossing"}) + "\n")
    serial = build_index("jsonl", corpus, tmp_path / "serial", workers=1, progress=False)
    parallel = build_index("jsonl", corpus, tmp_path / "parallel", workers=3, progress=False)
    assert serial.passages == parallel.passages == 1001
    bm25_files = sorted(p.name for p in (tmp_path / "serial" / "bm25").iterdir())
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "serial" / "bm25", tmp_path / "parallel" / "bm25",
                                           bm25_files, shallow=False)
    assert not mismatch and not errors
    hits = open_index(tmp_path / "parallel").search("zebra crossing", 3)
    assert hits[0].title == "Zebra crossing"


def test_bad_record_midway_stops_the_workers_and_names_the_line(tmp_path, small_batches):
    corpus = synthetic.write_jsonl(tmp_path / "c.jsonl", 500, vocab=1000)
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("{not json\n")
    with pytest.raises(CorpusError, match=r"c\.jsonl.*501"):
        build_index("jsonl", corpus, tmp_path / "ix", workers=2, progress=False)
    assert not (tmp_path / "ix").exists()


def test_a_script_without_a_main_guard_gets_told_how_to_fix_it(tmp_path):
    """Spawned workers import the calling script again; unguarded, each would start its own
    build. The build must stop with the fix in its message, not a bare BrokenProcessPool,
    and leave no index behind."""
    import subprocess
    import sys

    corpus = synthetic.write_jsonl(tmp_path / "c.jsonl", 2 * BM25Builder.BATCH + 10, vocab=500)
    script = tmp_path / "unguarded.py"
    script.write_text("from harness_learning.retrieval.build import build_index\n"
                      f"build_index('jsonl', {str(corpus)!r}, {str(tmp_path / 'ix')!r}, "
                      "workers=2, progress=False)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=build.__file__.rsplit("/retrieval/", 1)[0])
    assert done.returncode != 0
    assert "WorkerDied" in done.stderr and '__name__ == "__main__"' in done.stderr
    assert not (tmp_path / "ix").exists()
