"""Chroma with the offline MiniLM embedding, on a ~100-passage real closed corpus."""

import json
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from harness_learning.retrieval import ChromaIndex, HybridRetriever, build_index, open_index
from harness_learning.retrieval.embedding import MODEL_DIM, _ef_class, make_embedding_function
from harness_learning.retrieval.manifest import Manifest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(musique_small, tmp_path_factory):
    out = tmp_path_factory.mktemp("chroma") / "ix"
    seen: list[int] = []
    cls = _ef_class()
    real = cls.__call__

    def counting(self, input):  # noqa: A002 (Chroma checks this exact signature)
        seen.append(len(input))
        return real(self, input)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cls, "__call__", counting)
        first = build_index("musique", musique_small, out, "both", limit=40, progress=False)
        first_embedded = sum(seen)
        seen.clear()
        second = build_index("musique", musique_small, out, "both", progress=False)
    return out, first, first_embedded, second, sum(seen)


def test_ingestion_is_resumable(built):
    out, first, first_embedded, second, second_embedded = built
    assert first.chroma_count == first_embedded == 40
    assert second.chroma_count == second.passages > 40
    assert second_embedded == second.passages - 40  # the stored 40 were skipped
    m = Manifest.load(out)
    assert m.backends == ["bm25", "chroma"] and m.embedding["dim"] == MODEL_DIM


def test_embeddings_are_unit_384_vectors():
    vecs = make_embedding_function()(["a cat", "a dog"])
    assert [v.shape for v in vecs] == [(MODEL_DIM,)] * 2
    assert np.allclose([np.linalg.norm(v) for v in vecs], 1.0, atol=1e-4)


def _questions(path):
    return json.loads(Path(path).read_text())


def test_dense_search_finds_supporting_paragraphs(built, musique_small):
    idx = open_index(built[0], "chroma")
    assert isinstance(idx, ChromaIndex)
    found, recs = 0, _questions(musique_small)
    for rec in recs:
        gold = {p["paragraph_text"] for p in rec["paragraphs"] if p["is_supporting"]}
        hits = idx.search(rec["question"], 5)
        assert len(hits) == 5 and hits[0].score >= hits[-1].score
        found += bool(gold & {p.text for p in hits})
    assert found >= len(recs) / 2


def test_hybrid_and_batch_and_threads(built, musique_small):
    qs = [r["question"] for r in _questions(musique_small)]
    h = open_index(built[0], "hybrid")
    assert isinstance(h, HybridRetriever)
    one = [h.search(q, 4) for q in qs]
    assert h.search_batch(qs, 4) == one
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(lambda q: h.search(q, 4), qs)) == one


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_http_client_against_chroma_run(musique_small, tmp_path):
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(exe).exists():
        pytest.skip("the `chroma` server command is not installed")
    port = _free_port()
    server = subprocess.Popen([exe, "run", "--path", str(tmp_path / "srv"), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    pytest.fail("chroma run did not start")
                time.sleep(0.5)
        s = build_index("musique", musique_small, tmp_path / "ix", "chroma", limit=20,
                        chroma_url=url, progress=False)
        assert s.chroma_count == 20 and not (tmp_path / "ix" / "chroma").exists()
        hits = open_index(tmp_path / "ix").search("journal", 3)
        assert len(hits) == 3
    finally:
        server.terminate()
        server.wait(timeout=30)
