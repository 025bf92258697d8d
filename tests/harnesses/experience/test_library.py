"""The experience library's records and file (harnesses/experience): changes read off a diff
apply again to the source, one id per normalised change, a damaged SQLite file refused in one
line and left as it was, and an export's bad lines skipped. What every backend must do (merging,
two writers at once, a newer schema, an unreadable entry, bad locations) is
test_conformance.py's, run against each backend."""

from __future__ import annotations

import json

import pytest
from experience_records import entry, outcome

from harness_learning.harnesses.edits.edit import Block, Edit
from harness_learning.harnesses.edits.search_replace import apply_blocks
from harness_learning.harnesses.experience import Library, LibraryError
from harness_learning.harnesses.experience.entry import (
    SCHEMA_VERSION,
    change_blocks,
    edit_id,
    operator_id,
)
from harness_learning.harnesses.experience.library import FILE, read_export

PARENT = '''from langgraph.graph import StateGraph

PROMPT = "Answer the question."


def solve(state, tools):
    reply = tools.llm(PROMPT + state["question"])
    return {"answer": reply.strip()}


def build_graph(tools):
    graph = StateGraph(dict)
    return graph
'''


def applied(parent: str, blocks) -> str:
    return apply_blocks(parent, Edit("search_replace", tuple(Block(s, r) for s, r in blocks)))


@pytest.mark.parametrize("child", [
    PARENT.replace("Answer the question.", "Answer with a number only."),
    PARENT.replace("    return {", "    reply = reply.rstrip('.')\n    return {"),
    "# a header\n" + PARENT,
    PARENT + "\n\nEXTRA = 1\n",
    PARENT.replace("PROMPT = ", "STYLE = 2\nPROMPT = ").replace("graph = StateGraph(dict)",
                                                               "graph = StateGraph(dict)  # kept"),
])
def test_a_change_read_off_the_diff_applies_again(child):
    blocks = change_blocks(PARENT, child)
    assert blocks and applied(PARENT, blocks).rstrip("\n") == child.rstrip("\n")


def test_one_id_per_normalised_change():
    a = change_blocks(PARENT, PARENT.replace("Answer the question.", "Answer briefly."))
    spaced = tuple((s, r.replace('PROMPT = "', 'PROMPT  =  "')) for s, r in a)
    other = change_blocks(PARENT, PARENT.replace("Answer the question.", "Answer slowly."))
    assert edit_id(a) == edit_id(tuple((f"  {s}\n\n", r) for s, r in a))
    assert edit_id(a) != edit_id(spaced) != edit_id(other)
    assert operator_id("plan") != operator_id("vote")


def test_a_damaged_file_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / FILE).write_bytes(b"this is no database" * 100)
    with pytest.raises(LibraryError) as err:
        Library(tmp_path)
    assert "\n" not in str(err.value) and "not a readable experience library" in str(err.value)
    assert (tmp_path / FILE).read_bytes() == b"this is no database" * 100


def test_export_and_import_round_trip_and_skip_bad_lines(tmp_path):
    with Library(tmp_path / "a") as lib:
        lib.add([entry([outcome()]), entry([outcome(verdict="invalid", score=None)], "vote")])
        assert lib.export(tmp_path / "x.jsonl") == 2
    text = (tmp_path / "x.jsonl").read_text()
    (tmp_path / "x.jsonl").write_text(text + "{not json\n")
    entries, bad = read_export(tmp_path / "x.jsonl")
    assert len(entries) == 2 and len(bad) == 1 and "x.jsonl:4: skipped" in bad[0]
    with Library(tmp_path / "b") as other:
        other.add(entries)
        assert other.entries() == sorted(entries, key=lambda e: e.id)
    newer = json.dumps({"format": "harness-learning experience", "schema": SCHEMA_VERSION + 1})
    (tmp_path / "y.jsonl").write_text(newer + "\n")
    with pytest.raises(LibraryError, match="newer"):
        read_export(tmp_path / "y.jsonl")
