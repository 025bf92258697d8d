import bz2
import json
import tarfile
from collections import Counter

import pytest

from harness_learning.retrieval import CorpusError, iter_corpus


def test_musique_closed_corpus_equals_the_published_one(musique_file, data_dir):
    ours = list(iter_corpus("musique", musique_file))
    published = json.loads((data_dir / "musique" / "musique_train_corpus.json").read_text())
    assert ours == published  # same passages, same order: union of paragraphs, deduplicated


def test_dedup_is_on_title_and_text_never_title_alone(musique_file):
    ours = list(iter_corpus("musique", musique_file))
    pairs = Counter((p["title"], p["text"]) for p in ours)
    titles = Counter(p["title"] for p in ours)
    assert max(pairs.values()) == 1
    assert max(titles.values()) > 1  # one title, several different paragraphs: all kept
    raw = json.loads(musique_file.read_text())
    assert sum(len(r["paragraphs"]) for r in raw) > len(ours)  # repeats were dropped


def test_2wiki_corpus_joins_sentences_like_the_published_corpus(twowiki_file, data_dir):
    ours = list(iter_corpus("2wiki", twowiki_file))
    raw = json.loads(twowiki_file.read_text())
    all_pairs = {(t, " ".join(s.strip() for s in sents)) for r in raw for t, sents in r["context"]}
    assert {(p["title"], p["text"]) for p in ours} == all_pairs
    published = {(p["title"], p["text"]) for p in iter_corpus("2wiki", data_dir / "2wikimultihopqa" / "2wikimultihopqa_corpus.json")}
    assert len(published) == 6119
    assert len(published & set(all_pairs)) > 100  # passages shared by both files match exactly


def _wiki_shards(root, data_dir):
    """The official abstracts layout, built from real HotpotQA context paragraphs."""
    arts = {}
    for line in (data_dir / "hotpotqa" / "dev_hf_slice.jsonl").read_text().splitlines()[:20]:
        ctx = json.loads(line)["context"]
        for title, sents in zip(ctx["title"], ctx["sentences"], strict=True):
            arts[title] = sents
    items = sorted(arts.items())
    shards = [items[i::3] for i in range(3)]
    for n, shard in enumerate(shards):
        d = root / "wiki" / ("AA" if n < 2 else "AB")
        d.mkdir(parents=True, exist_ok=True)
        body = "".join(json.dumps({"id": str(i), "url": f"https://en.wikipedia.org/wiki?curid={i}",
                                   "title": t, "text": s, "charoffset": [],
                                   "text_with_links": s}) + "\n" for i, (t, s) in enumerate(shard))
        (d / f"wiki_{n:02d}.bz2").write_bytes(bz2.compress(body.encode()))
    return root / "wiki", dict(items)


def test_hotpotqa_wiki_shards_directory_and_tarball(tmp_path, data_dir):
    wiki, arts = _wiki_shards(tmp_path, data_dir)
    got = list(iter_corpus("hotpotqa-wiki", wiki))
    assert len(got) == len(arts)
    for p in got:
        assert p["text"] == " ".join(s.strip() for s in arts[p["title"]])
    tar = tmp_path / "abstracts.tar.bz2"
    with tarfile.open(tar, "w:bz2") as t:
        t.add(wiki, arcname="enwiki-abstracts")
    assert sorted(p["title"] for p in iter_corpus("hotpotqa-wiki", tar)) == sorted(arts)
    one = next(iter(sorted(wiki.rglob("*.bz2"))))
    assert 0 < len(list(iter_corpus("hotpotqa-wiki", one))) < len(arts)


def test_hotpotqa_wiki_bad_shard_line_is_named(tmp_path):
    shard = tmp_path / "wiki_00.bz2"
    shard.write_bytes(bz2.compress(b'{"title": "A", "text": ["x."]}\n{"title": "B", "text": [\n'))
    with pytest.raises(CorpusError, match=r"wiki_00\.bz2:2: malformed JSON"):
        list(iter_corpus("hotpotqa-wiki", shard))


def test_jsonl_records_and_their_errors(tmp_path):
    good = tmp_path / "c.jsonl"
    good.write_text('{"title": "A", "text": "alpha"}\n\n{"title": "B", "text": ["b1.", "b2."]}\n')
    assert list(iter_corpus("jsonl", good)) == [{"title": "A", "text": "alpha"},
                                                {"title": "B", "text": "b1. b2."}]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "A", "text": "alpha"}\n{"name": "B"}\n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: record lacks 'title'"):
        list(iter_corpus("jsonl", bad))
    with pytest.raises(ValueError, match="unknown corpus kind"):
        iter_corpus("wikipedia", good)


@pytest.mark.parametrize(("kind", "record", "says"), [
    ("jsonl", {"title": "B"}, r"record lacks 'text'; each passage is \{\"title\""),
    ("jsonl", {"title": "B", "text": None}, r"'text' must be a string or a list of sentences, "
                                             r"got null; each passage is"),
    ("jsonl", {"title": "B", "text": "  "}, r"record 'B' has an empty 'text'; give its passage "
                                             r"text or drop the record"),
    ("musique", {"paragraphs": [{"title": "B"}]},
     r"paragraph 0: record lacks 'paragraph_text'; a MuSiQue record holds \"paragraphs\""),
])
def test_a_record_without_text_gets_one_line_naming_it_and_the_shape(tmp_path, kind, record,
                                                                      says):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"title": "A", "text": "alpha"}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: " + says) as err:
        list(iter_corpus(kind, bad))
    assert "\n" not in str(err.value)
