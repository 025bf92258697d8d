"""JsonlLogStore's own behaviour: a torn last line, a bad line, another schema version."""

from __future__ import annotations

import json

import pytest
from jsonl_store import FILENAME, JsonlLogStore

from harness_learning.harnesses.store import LogStoreError, SchemaVersionError


def test_a_torn_last_line_is_cut_and_the_log_goes_on(tmp_path):
    with JsonlLogStore(tmp_path) as store:
        store.append_event("first")
    path = tmp_path / FILENAME
    path.write_bytes(path.read_bytes() + b'{"t": "events", "r": {"seq": 2, "ts"')  # killed mid-write
    with JsonlLogStore(tmp_path) as store:
        assert [e.kind for e in store.iter_events()] == ["first"]
        store.append_event("second")
    with JsonlLogStore(tmp_path) as store:
        assert [e.kind for e in store.iter_events()] == ["first", "second"]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_bad_line_inside_the_log_is_an_error_naming_file_and_line(tmp_path):
    with JsonlLogStore(tmp_path) as store:
        store.append_event("first")
    path = tmp_path / FILENAME
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    before = path.read_bytes()
    with pytest.raises(LogStoreError, match=rf"{FILENAME}, line 2: not a log record"):
        JsonlLogStore(tmp_path)
    assert path.read_bytes() == before  # nothing was changed


def test_a_log_of_another_schema_version_is_refused(tmp_path):
    (tmp_path / FILENAME).write_text(json.dumps({"t": "schema", "r": {"version": 99}}) + "\n")
    with pytest.raises(SchemaVersionError, match="schema version 99"):
        JsonlLogStore(tmp_path)
