"""JSON list / JSONL detection and streaming, including records larger than a read chunk."""

from __future__ import annotations

import json

import pytest

from harness_learning.evals.qa import reader
from harness_learning.evals.qa.reader import RecordError, iter_json_records

RECORDS = [{"id": str(i), "text": "x" * (i * 7), "nested": {"a": [i, "]", "\u2028"]}}
           for i in range(50)]


def test_json_list_and_jsonl_give_the_same_records(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "_CHUNK", 64)  # force many refills mid-record
    as_list = tmp_path / "a.json"
    as_list.write_text("\n  " + json.dumps(RECORDS, indent=1), encoding="utf-8")
    as_lines = tmp_path / "a.jsonl"
    as_lines.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n\n", encoding="utf-8")
    got_list = [r for _, r in iter_json_records(as_list)]
    got_lines = [r for _, r in iter_json_records(as_lines)]
    assert got_list == RECORDS
    assert got_lines == RECORDS


def test_empty_list_and_empty_file(tmp_path):
    (tmp_path / "e.json").write_text("[ ]")
    (tmp_path / "e.jsonl").write_text("")
    assert list(iter_json_records(tmp_path / "e.json")) == []
    assert list(iter_json_records(tmp_path / "e.jsonl")) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"id": "a"}, {"id": "b"', "not valid JSON"),
        ('[{"id": "a"} {"id": "b"}]', "expected ','"),
        ('[{"id": "a"}, 3]', "not a JSON object"),
        ('{"id": "a"}\n{"id": oops}\n', "line 2 is not JSON"),
        ('"just a string"', "expected a JSON list or JSON lines"),
    ],
)
def test_malformed_files_name_file_and_record(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(RecordError, match=message) as info:
        list(iter_json_records(path))
    assert str(path) in str(info.value)
    assert "record 1" in str(info.value) or "record 0" in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        list(iter_json_records(tmp_path / "nope.json"))
