"""Loaders on the real samples, both HotpotQA layouts, 2Wiki aliases, and bad records."""

from __future__ import annotations

import json

import pytest

from harness_learning.evals.qa.datasets import (
    iter_2wiki,
    iter_hotpotqa,
    iter_musique,
    load_2wiki_aliases,
    load_records,
)
from harness_learning.evals.qa.reader import RecordError
from harness_learning.evals.samples import SAMPLE_FILES


def _raw(path):
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("dataset", ["hotpotqa", "musique", "2wiki"])
def test_real_samples_load_every_record(data_dir, dataset):
    path = data_dir / SAMPLE_FILES[dataset]
    raw = _raw(path)
    records = load_records(dataset, path)
    assert len(records) == len(raw)
    for rec, src in zip(records, raw, strict=True):
        assert rec.id == src.get("_id", src.get("id"))
        assert rec.question == src["question"]
        assert rec.answers[0] == src["answer"]
        assert rec.dataset == dataset
        assert rec.supporting_titles, rec.id
        assert len(set(rec.answers)) == len(rec.answers)


def test_hotpotqa_hf_supporting_titles(data_dir):
    path = data_dir / SAMPLE_FILES["hotpotqa"]
    first = next(iter_hotpotqa(path))
    src = _raw(path)[0]
    assert first.supporting_titles == tuple(dict.fromkeys(src["supporting_facts"]["title"]))
    assert first.type == src["type"]


def _to_original_layout(rec: dict) -> dict:
    ctx, sf = rec["context"], rec["supporting_facts"]
    out = {k: v for k, v in rec.items() if k not in ("id", "context", "supporting_facts")}
    out["_id"] = rec["id"]
    out["context"] = [[t, s] for t, s in zip(ctx["title"], ctx["sentences"], strict=True)]
    out["supporting_facts"] = [[t, i] for t, i in zip(sf["title"], sf["sent_id"], strict=True)]
    return out


def test_hotpotqa_original_layout_matches_hf_layout(data_dir, tmp_path):
    hf = data_dir / SAMPLE_FILES["hotpotqa"]
    original = tmp_path / "hotpot_dev_distractor_v1.json"
    original.write_text(json.dumps([_to_original_layout(r) for r in _raw(hf)]))
    assert list(iter_hotpotqa(original)) == list(iter_hotpotqa(hf))


def test_musique_jsonl_and_aliases(data_dir, tmp_path):
    src = data_dir / SAMPLE_FILES["musique"]
    raw = _raw(src)
    jsonl = tmp_path / "musique_ans_v1.0_train.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in raw))
    records = list(iter_musique(jsonl))
    assert records == list(iter_musique(src))
    with_alias = next(r for r, s in zip(records, raw, strict=True) if s["answer_aliases"])
    src_rec = next(s for s in raw if s["id"] == with_alias.id)
    assert set(with_alias.answers) == {src_rec["answer"], *src_rec["answer_aliases"]}
    supporting = [p["title"] for p in src_rec["paragraphs"] if p["is_supporting"]]
    assert with_alias.supporting_titles == tuple(dict.fromkeys(supporting))
    assert with_alias.type == with_alias.id.split("__")[0]


def _alias_file(tmp_path, rows) -> str:
    path = tmp_path / "id_aliases.json"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def test_2wiki_aliases_and_demonyms(data_dir, tmp_path):
    path = data_dir / SAMPLE_FILES["2wiki"]
    raw = _raw(path)
    ids = sorted({r["answer_id"] for r in raw if r["answer_id"]})
    rows = [{"Q_id": q, "aliases": [f"alias of {q}"], "demonyms": [f"demonym of {q}"]}
            for q in ids]
    aliases = _alias_file(tmp_path, rows)
    records = list(iter_2wiki(path, aliases=aliases))
    assert len(records) == len(raw)
    for rec, src in zip(records, raw, strict=True):
        qid = src["answer_id"]
        expected = (src["answer"],) + ((f"alias of {qid}", f"demonym of {qid}") if qid else ())
        assert rec.answers == expected
    assert load_2wiki_aliases(aliases)[ids[0]] == (f"alias of {ids[0]}", f"demonym of {ids[0]}")


def test_2wiki_unknown_answer_id_is_an_error(data_dir, tmp_path):
    path = data_dir / SAMPLE_FILES["2wiki"]
    raw = _raw(path)
    index = next(i for i, r in enumerate(raw) if r["answer_id"])
    aliases = _alias_file(tmp_path, [{"Q_id": "Q0", "aliases": [], "demonyms": []}])
    with pytest.raises(RecordError, match="not in the alias file") as info:
        list(iter_2wiki(path, aliases=aliases))
    assert info.value.index == index and info.value.record_id == raw[index]["_id"]
    assert str(path) in str(info.value)


def test_bad_alias_file(tmp_path):
    bad = _alias_file(tmp_path, [{"Q_id": "Q1", "aliases": "not a list", "demonyms": []}])
    with pytest.raises(RecordError, match="id_aliases.json: record 0"):
        load_2wiki_aliases(bad)


def _write_with(tmp_path, data_dir, dataset, index, mutate):
    raw = _raw(data_dir / SAMPLE_FILES[dataset])[:5]
    mutate(raw[index])
    path = tmp_path / f"{dataset}.json"
    path.write_text(json.dumps(raw))
    return path, raw[index].get("_id", raw[index].get("id"))


@pytest.mark.parametrize(
    ("dataset", "mutate", "message"),
    [
        ("hotpotqa", lambda r: r.pop("answer"), "'answer' is missing"),
        ("hotpotqa", lambda r: r.update(answer="  "), "'answer' is not a non-empty string"),
        ("hotpotqa", lambda r: r["context"].update(title=r["context"]["title"][:-1]),
         "titles but"),
        ("hotpotqa", lambda r: r.update(context="text"), "'context' must be a list or a dict"),
        ("2wiki", lambda r: r.update(context=[["only a title"]]), "list of \\[title, \\[sentences"),
        ("2wiki", lambda r: r.update(supporting_facts=None), "'supporting_facts' is missing"),
        ("musique", lambda r: r.pop("answer"), "'answer' is missing"),
        ("musique", lambda r: r["paragraphs"][0].pop("paragraph_text"), "paragraph 0 needs"),
        ("musique", lambda r: r.update(answer_aliases="x"), "'answer_aliases' must be a list"),
    ],
)
def test_bad_records_name_file_index_and_id(tmp_path, data_dir, dataset, mutate, message):
    path, rid = _write_with(tmp_path, data_dir, dataset, 3, mutate)
    with pytest.raises(RecordError, match=message) as info:
        load_records(dataset, path)
    assert info.value.index == 3 and info.value.record_id == rid
    assert f"{path}: record 3 (id {rid!r})" in str(info.value)


def test_duplicate_ids_are_an_error(tmp_path, data_dir):
    raw = _raw(data_dir / SAMPLE_FILES["musique"])[:3]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([*raw, raw[1]]))
    with pytest.raises(RecordError, match="duplicate id \\(first at record 1\\)"):
        load_records("musique", path)


def test_unknown_dataset():
    with pytest.raises(ValueError, match="known: hotpotqa, musique, 2wiki"):
        load_records("squad", "x.json")
