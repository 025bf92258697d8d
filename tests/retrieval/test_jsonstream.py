import json

import pytest

from harness_learning.retrieval import jsonstream
from harness_learning.retrieval.jsonstream import CorpusError, iter_json_records


def _records(path):
    return [rec for _, rec in iter_json_records(path)]


def test_json_array_streams_across_chunk_edges(tmp_path, monkeypatch):
    recs = [{"title": f"t{i}", "text": "é" * (i % 7) + "x" * i, "n": i * 1.5} for i in range(300)]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(recs, indent=1, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(jsonstream, "_CHUNK", 7)  # every element and number crosses an edge
    assert _records(path) == recs


def test_lines_are_reported_for_array_elements(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[\n {"a": 1},\n\n {"a": 2}\n]\n')
    assert [line for line, _ in iter_json_records(path)] == [2, 4]


def test_malformed_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "a", "text": "b"}\n{"title": "a", "text": \n')
    with pytest.raises(CorpusError, match=r"c\.jsonl:2: malformed JSON"):
        _records(path)


def test_malformed_array_element_names_its_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('[\n{"a": 1},\n{"a": oops}\n]')
    with pytest.raises(CorpusError, match=r"c\.json:3: malformed JSON"):
        _records(path)


@pytest.mark.parametrize("name,body", [("x.jsonl", b'{"a": 1}\n{"a": "\xff"}\n'),
                                       ("x.json", b'[{"a": 1},\n{"a": "\xff"}]')])
def test_non_utf8_byte_names_file_and_line(tmp_path, name, body):
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(CorpusError, match=rf"{name}:2: not UTF-8"):
        _records(path)


def test_truncated_list_and_missing_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('[{"a": 1}, {"a": 2}')
    with pytest.raises(CorpusError, match="truncated JSON list|malformed"):
        _records(path)
    with pytest.raises(CorpusError, match="no such file"):
        _records(tmp_path / "missing.json")
