"""Index directories: manifest, open_index, and bad input that must leave an index intact."""

import hashlib
import json

import pytest

from harness_learning.retrieval import CorpusError, IndexMismatchError, build_index, open_index
from harness_learning.retrieval.manifest import Manifest

pytestmark = pytest.mark.slow


def _snapshot(d):
    return {p.relative_to(d): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(twowiki_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("build") / "ix"
    summary = build_index("2wiki", twowiki_file, out, "bm25", progress=False)
    return out, summary


def test_manifest_records_what_the_index_holds(built):
    out, summary = built
    m = Manifest.load(out)
    assert m.passages == summary.passages > 0
    assert m.backends == ["bm25"] and m.corpus["kind"] == "2wiki"
    assert m.tokenizer["stemmer"] == "english" and m.bm25["method"] == "atire"
    assert summary.bytes_on_disk > 0 and not out.with_name("ix.partial").exists()


def test_open_index_backends(built):
    out, _ = built
    assert "Dillon Francis" in [p.title for p in open_index(out).search("Dillon Francis", 3)]
    with pytest.raises(ValueError, match="needs \\['chroma'\\]"):
        open_index(out, "hybrid")
    with pytest.raises(ValueError, match="unknown backend"):
        open_index(out, "faiss")
    with pytest.raises(FileNotFoundError, match="not an index directory"):
        open_index(out.parent / "nowhere")


def _bad_inputs(tmp_path):
    ok = '{"title": "A", "text": "alpha"}\n'
    (tmp_path / "malformed.jsonl").write_text(ok + '{"title": "B", "text": "beta"\n')
    (tmp_path / "latin1.jsonl").write_bytes(ok.encode() + b'{"title": "Caf\xe9", "text": "x"}\n')
    (tmp_path / "empty.jsonl").write_text("\n\n")
    return [("malformed.jsonl", r"malformed\.jsonl:2: malformed JSON"),
            ("latin1.jsonl", r"latin1\.jsonl:2: not UTF-8"),
            ("empty.jsonl", r"empty\.jsonl: empty corpus"),
            ("missing.jsonl", r"missing\.jsonl: no such file")]


def test_bad_input_is_named_and_leaves_the_index_intact(built, tmp_path):
    out, _ = built
    before = _snapshot(out)
    for name, pattern in _bad_inputs(tmp_path):
        with pytest.raises(CorpusError, match=pattern):
            build_index("jsonl", tmp_path / name, out, "bm25", progress=False)
        assert _snapshot(out) == before
        assert not out.with_name("ix.partial").exists()
    assert open_index(out).search("Dillon Francis", 1)


def test_embedding_model_mismatch_is_refused(built, tmp_path):
    out, _ = built
    m = Manifest.load(out)
    m.embedding, m.backends = {"model": "bge-small-en", "dim": 512}, ["bm25", "chroma"]
    m.chroma = {"collection": "passages", "url": None, "count": 1, "limit": None}
    other = tmp_path / "other"
    other.mkdir()
    for f in out.rglob("*"):
        if f.is_file():
            (other / f.relative_to(out)).parent.mkdir(parents=True, exist_ok=True)
            (other / f.relative_to(out)).write_bytes(f.read_bytes())
    m.save(other)
    before = _snapshot(other)
    (tmp_path / "x.jsonl").write_text('{"title": "A", "text": "alpha"}\n')
    with pytest.raises(IndexMismatchError, match="bge-small-en.*all-MiniLM-L6-v2"):
        build_index("jsonl", tmp_path / "x.jsonl", other, "chroma", progress=False)
    with pytest.raises(IndexMismatchError, match="bge-small-en"):
        open_index(other, "chroma")
    assert _snapshot(other) == before


def test_rebuild_replaces_the_index(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "alpha beta"}) + "\n")
    out = tmp_path / "ix"
    build_index("jsonl", src, out, "bm25", progress=False)
    src.write_text("".join(json.dumps({"title": t, "text": f"gamma {t * 2}"}) + "\n" for t in "XYZ"))
    s = build_index("jsonl", src, out, "bm25", progress=False)
    assert s.passages == 3 and open_index(out).search("gamma YY", 5)[0].title == "Y"
    assert not out.with_name("ix.old").exists()


def test_refuses_to_replace_a_directory_that_is_not_an_index(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "alpha beta"}) + "\n")
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not an index directory"):
        build_index("jsonl", src, precious, "bm25", progress=False)
    assert (precious / "notes.txt").read_text() == "keep me"
