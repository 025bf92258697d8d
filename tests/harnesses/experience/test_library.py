"""The experience library's records and file (harnesses/experience): changes read off a diff
apply again to the source, one id per normalised change, outcomes merged by key with negative
ones kept, and bad input (a damaged file, a newer schema, an unreadable entry, two writers at
once, a database URL) refused or skipped in one line with nothing lost."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from dataclasses import replace

import pytest

from harness_learning.harnesses.edits.edit import Block, Edit
from harness_learning.harnesses.edits.search_replace import apply_blocks
from harness_learning.harnesses.experience import Entry, Library, LibraryError, Outcome, Signature
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


def outcome(run="r1", round_=1, candidate=0, task="rg:products", **kw) -> Outcome:
    kw.setdefault("parent_score", 0.5)
    kw.setdefault("score", 0.6)
    return Outcome(run, round_, candidate, task, "multiply numbers",
                   Signature((("wrong_answer", 3),), ("arithmetic slips",), ("off by one",)),
                   **kw)


def entry(outcomes, name="plan") -> Entry:
    return Entry(operator_id(name), "operator", f"operator:{name}", f"block {name}",
                 operator=name, outcomes=tuple(outcomes))


def test_outcomes_merge_by_key_and_negative_ones_are_kept(tmp_path):
    with Library(tmp_path / "lib") as lib:
        lib.add([entry([outcome(), outcome(candidate=1, score=0.2, verdict="worse")])])
        lib.add([entry([outcome(task="rg:chain_sum"), outcome(score=0.9, held_out_gain=0.25)])])
        (held,) = lib.entries()
    assert [o.key for o in held.outcomes] == [("r1", 1, 0, "rg:chain_sum"),
                                              ("r1", 1, 0, "rg:products"),
                                              ("r1", 1, 1, "rg:products")]
    by_key = {o.key: o for o in held.outcomes}
    assert by_key[("r1", 1, 0, "rg:products")].gain == 0.25  # re-extracted: held-out wins
    assert by_key[("r1", 1, 1, "rg:products")].success is False
    assert round(by_key[("r1", 1, 1, "rg:products")].selection_gain, 3) == -0.3
    assert Entry.from_dict(json.loads(json.dumps(held.to_dict()))) == held


def test_a_database_url_is_one_line(tmp_path):
    with pytest.raises(LibraryError, match="postgresql:// library is not supported yet: give a directory"):
        Library("postgresql://me@host/db")


def test_a_damaged_file_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / FILE).write_bytes(b"this is no database" * 100)
    with pytest.raises(LibraryError) as err:
        Library(tmp_path)
    assert "\n" not in str(err.value) and "not a readable experience library" in str(err.value)
    assert (tmp_path / FILE).read_bytes() == b"this is no database" * 100


def test_a_newer_library_is_refused_and_left_as_it_was(tmp_path):
    Library(tmp_path).close()
    with sqlite3.connect(tmp_path / FILE) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION + 1),))
    before = (tmp_path / FILE).read_bytes()
    with pytest.raises(LibraryError, match="newer harness-learning .*upgrade"):
        Library(tmp_path)
    assert (tmp_path / FILE).read_bytes() == before


def test_an_unreadable_entry_is_skipped_never_overwritten(tmp_path):
    with Library(tmp_path) as lib:
        lib.add([entry([outcome()]), entry([outcome()], name="vote")])
    newer = {**entry([outcome()], name="vote").to_dict(), "schema": SCHEMA_VERSION + 1}
    with sqlite3.connect(tmp_path / FILE) as conn:
        conn.execute("UPDATE entries SET body = '{broken' WHERE id = ?", (operator_id("plan"),))
        conn.execute("UPDATE entries SET body = ? WHERE id = ?",
                     (json.dumps(newer), operator_id("vote")))
    with Library(tmp_path) as lib:
        assert lib.entries() == [] and len(lib.skipped) == 2
        assert lib.add([entry([outcome(run="r2")])]) == 0
        assert all("\n" not in line for line in lib.skipped)
    with sqlite3.connect(tmp_path / FILE) as conn:
        assert conn.execute("SELECT body FROM entries WHERE id = ?",
                            (operator_id("plan"),)).fetchone()[0] == "{broken"


def _write_many(path: str, run: str) -> None:
    with Library(path) as lib:
        for i in range(25):
            lib.add([entry([outcome(run=run, round_=i)]), entry([outcome(run=run)], f"op{i % 3}")])


def test_two_runs_writing_at_once_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_many, args=(str(tmp_path), run)) for run in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with Library(tmp_path) as lib:
        held = {e.id: e for e in lib.entries()}
    assert len(held[operator_id("plan")].outcomes) == 50
    # each run measured op0..op2 under one key: one outcome per run each
    assert [len(held[operator_id(f"op{i}")].outcomes) for i in range(3)] == [2, 2, 2]


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


def test_prefix_lookup(tmp_path):
    with Library(tmp_path) as lib:
        lib.add([entry([outcome()]), replace(entry([outcome()], "vote"))])
        assert lib.get(operator_id("vote")[:10]).operator == "vote"
        assert lib.get("") is None  # two match
