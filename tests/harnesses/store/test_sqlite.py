"""SQLiteLogStore: round trips, resume queries, schema-version refusal."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_lock import hold_a_write_lock

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import (
    Decision,
    Evaluation,
    LogStoreError,
    Outcome,
    Proposal,
    SchemaVersionError,
    SQLiteLogStore,
    clean_text,
    new_proposal,
    prompt_group_id,
    proposal_id,
    source_sha,
)
from harness_learning.harnesses.store.records import FLAT_VERDICT
from harness_learning.retrieval.passage import Passage

OLD_RUN = Path(__file__).resolve().parents[2] / "data" / "racing_run_v3"


@pytest.fixture
def store(tmp_path):
    s = SQLiteLogStore(tmp_path / "run")
    yield s
    s.close()


def test_run_metadata_is_recorded_once_and_returned_on_resume(tmp_path):
    with SQLiteLogStore(tmp_path) as s:
        meta = s.init_run({"task": "hotpotqa", "rounds": 3}, run_id="r1")
    with SQLiteLogStore(tmp_path) as s:
        again = s.init_run({"task": "other"})
        assert again == meta and again.config == {"task": "hotpotqa", "rounds": 3}
        with pytest.raises(LogStoreError, match="belongs to run 'r1'"):
            s.init_run({}, run_id="r2")


def test_versions_are_content_addressed_with_parents(store):
    seed = store.put_version("a = 1\n", note="seed")
    child = store.put_version("a = 2\n", parent=seed, round_=1, note="candidate 0")
    assert seed == source_sha("a = 1\n")
    assert store.put_version("a = 2\n", parent="other", round_=9) == child  # first record stays
    assert store.get_version(child).parent_sha == seed
    assert [v.sha for v in store.iter_versions()] == [seed, child]
    assert store.get_version_source(seed) == "a = 1\n"
    with pytest.raises(KeyError):
        store.get_version_source("0" * 64)


def test_evaluations_upsert_and_resume_skips_only_finished(store):
    run = store.init_run({})
    def ev(round_, *result, **fields):
        return Evaluation(run.run_id, "s", "selection", round_, ProblemResult(*result, **fields))

    store.put_evaluations([
        ev(1, "p1", "42", 1.0, calls=[ToolCall("llm", {})]),
        ev(1, "p2", None, None, error="down", error_kind="infra"),
        ev(1, "p3", None, 0.0, error="boom", error_kind="harness"),
        ev(2, "p4", "x", 0.0),
    ])
    assert set(store.get_results("s", ["p1", "p2", "p3"], "selection")) == {"p1", "p3"}
    store.put_evaluations([ev(1, "p2", "7", 0.0)])  # the retry
    assert set(store.get_results("s", ["p1", "p2", "p3"], "selection")) == {"p1", "p2", "p3"}
    rows = list(store.iter_evaluations(sha="s", round=1))
    assert [r.problem_id for r in rows] == ["p1", "p2", "p3"]
    assert rows[1].result == ProblemResult("p2", "7", 0.0)


def test_problem_results_round_trip_with_their_traces(store):
    result = ProblemResult("p1", "Paris", 1.0, latency_s=0.5, tokens=12, calls=[
        ToolCall("search", {"query": "capital", "k": 2}, [Passage("France", "Paris is ...", 1.5)]),
        ToolCall("llm", {"messages_or_prompt": "q"}, "Paris", tokens=12)])
    store.put_results("sha1", "feedback", 1, [result])
    got = store.get_results("sha1", ["p1", "p2"], "feedback")
    assert set(got) == {"p1"}
    ev = got["p1"]
    assert ev.completed and ev.tokens == 12 and ev.score == 1.0
    assert ev.calls[0].tool == "search" and ev.calls[0].result[0]["title"] == "France"
    assert ev.calls[1] == ToolCall("llm", {"messages_or_prompt": "q"}, "Paris", tokens=12)
    assert store.spent() == {"solver_calls": 1, "solver_tokens": 12, "solver_cost_usd": 0.0,
                             "proposer_calls": 0, "proposer_tokens": 0,
                             "proposer_cost_usd": 0.0, "tokens": 12, "cost_usd": 0.0}


def test_proposals_grouped_by_prompt_and_settled_when_judged(store):
    prompt_a = [{"role": "user", "content": "improve A"}]
    prompt_b = [{"role": "user", "content": "improve B"}]
    for i, prompt in enumerate([prompt_a, prompt_b, prompt_a]):
        store.put_proposal(Proposal(f"p{i}", 1, prompt_group_id(prompt), prompt, f"c{i}",
                                    finish_reason="stop", logprobs=[-0.5, -1.0]))
    store.settle_proposal("p2", "abc", Outcome(parsed=True, applied=True, valid=True,
                                               reward=0.45, reward_parts={"task_score": 0.3}))
    groups = list(store.iter_proposal_groups())
    assert [[p.id for p in g.proposals] for g in groups] == [["p0", "p2"], ["p1"]]
    assert groups[0].prompt == prompt_a
    p2 = store.get_proposal("p2")
    assert (p2.valid, p2.reward, p2.reward_parts, p2.logprobs, p2.candidate_sha) == (
        True, 0.45, {"task_score": 0.3}, [-0.5, -1.0], "abc")
    with pytest.raises(KeyError):
        store.settle_proposal("nope", None, Outcome(parsed=False, applied=False))


def test_group_id_is_stable_across_key_order():
    a = [{"role": "user", "content": "x"}]
    b = [{"content": "x", "role": "user"}]
    assert prompt_group_id(a) == prompt_group_id(b) != prompt_group_id([{"role": "user", "content": "y"}])


def test_drawn_proposals_by_round_and_index(store):
    class Completion:
        text, finish_reason, model, prompt_tokens, completion_tokens, latency_s = "c", "length", "m", 10, 5, 0.1

    messages = [{"role": "user", "content": "hi"}]
    draft = new_proposal(2, 3, messages, Completion(), "whole_program", parent_sha="p")
    store.put_proposal(draft)
    assert store.get_proposal(proposal_id(2, 3)) == dataclasses.replace(
        draft, created_at=store.get_proposal(proposal_id(2, 3)).created_at)
    assert draft.finish_reason == "length" and draft.group_id == prompt_group_id(messages)
    assert store.spent()["proposer_tokens"] == 15


def test_decisions_events_and_lineage(store):
    run = store.init_run({})
    seed = store.put_version("s\n", note="seed")
    cand = store.put_version("c\n", parent=seed, round_=1)
    for sha, score in ((seed, 0.2), (cand, 0.6)):
        store.put_evaluations([Evaluation(run.run_id, sha, "selection", 1,
                                          ProblemResult("p", "a", score))])
    store.put_decision(round_=1, current_sha=seed, chosen_sha=cand, policy="strict",
                       reason="higher", scores={0: 0.6})
    store.put_decision(Decision(2, cand, cand, "strict", "no candidate was better", {}))
    assert [(s.round, s.sha, s.selection_score) for s in store.lineage()] == [
        (0, seed, 0.2), (1, cand, 0.6), (2, cand, None)]
    assert [d.scores for d in store.iter_decisions()] == [{"0": 0.6}, {}]
    seqs = [store.append_event(k, {"i": i}) for i, k in enumerate(["a", "b", "a"])]
    assert seqs == sorted(seqs)
    assert [e.payload["i"] for e in store.iter_events(kinds=["a"])] == [0, 2]
    assert [e.kind for e in store.iter_events(after_seq=seqs[0])] == ["b", "a"]


def test_async_twins(store):
    async def go():
        sha = await store.aput_version("x\n")
        await store.aput_results(sha, "test", -1, [ProblemResult("p", "a", 0.0)])
        await store.aappend_event("e", {})
        return await store.aget_results(sha, ["p"], "test"), await store.aget_version_source(sha)

    results, source = asyncio.run(go())
    assert results == {"p": ProblemResult("p", "a", 0.0)} and source == "x\n"


def test_newer_schema_version_is_refused_and_left_untouched(tmp_path):
    with SQLiteLogStore(tmp_path) as s:
        s.append_event("hello")
    con = sqlite3.connect(tmp_path / "log.sqlite")
    con.execute("UPDATE hl_schema SET value='999'")
    con.commit()
    con.close()
    before = (tmp_path / "log.sqlite").read_bytes()
    with pytest.raises(SchemaVersionError, match="schema version 999"):
        SQLiteLogStore(tmp_path)
    assert (tmp_path / "log.sqlite").read_bytes() == before


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path):
    (tmp_path / "log.sqlite").write_bytes(b"not a database at all, just text " * 10)
    before = (tmp_path / "log.sqlite").read_bytes()
    with pytest.raises(LogStoreError, match="not a readable SQLite log"):
        SQLiteLogStore(tmp_path)
    assert (tmp_path / "log.sqlite").read_bytes() == before


def test_journal_is_wal(store):
    assert store._query("PRAGMA journal_mode")[0][0] == "wal"


def test_a_new_log_another_process_is_opening_is_waited_for_not_refused(tmp_path):
    holder = hold_a_write_lock(tmp_path / "log.sqlite", 0.3)
    with SQLiteLogStore(tmp_path) as s:
        holder.join()
        s.append_event("hello")
        assert s._query("PRAGMA journal_mode")[0][0] == "wal"


ANY_TEXT = st.text(alphabet=st.characters(), max_size=40)  # includes lone surrogates


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=ANY_TEXT, arg=ANY_TEXT, completion=ANY_TEXT, source=ANY_TEXT)
def test_any_text_is_stored_and_read_back(tmp_path, answer, arg, completion, source):
    with SQLiteLogStore(tmp_path) as s:
        sha = s.put_version(source)
        assert s.get_version_source(sha) == clean_text(source) and sha == source_sha(source)
        s.put_evaluations([Evaluation("r", sha, "feedback", 1, ProblemResult(
            "p", answer, 0.0, calls=[ToolCall("llm", {"x": arg}, answer)]))])
        ev = s.get_results(sha, ["p"], "feedback")["p"]
        assert ev.answer == clean_text(answer) and ev.calls[0].args["x"] == clean_text(arg)
        s.put_proposal(Proposal("x", 1, prompt_group_id([{"content": arg}]), [{"content": arg}], completion))
        assert s.get_proposal("x").completion == clean_text(completion)


def test_concurrent_async_writes_all_land(store):
    async def go():
        await asyncio.gather(*(asyncio.to_thread(store.put_evaluations, [
                                   Evaluation("r", "s", "selection", 1, ProblemResult(f"p{i}", "a", 1.0))])
                               for i in range(40)),
                             *(store.aappend_event("tick", {"i": i}) for i in range(40)))

    asyncio.run(go())
    ids = [f"p{i}" for i in range(40)]
    assert set(store.get_results("s", ids, "selection")) == set(ids)
    assert sorted(e.payload["i"] for e in store.iter_events()) == list(range(40))
    assert store.integrity_check() == "ok"


def old_log(tmp_path) -> Path:
    """A copy of the log of a run made with log schema 3 (tests/data/racing_run_v3)."""
    (tmp_path / "run").mkdir()
    shutil.copy(OLD_RUN / "log.sqlite", tmp_path / "run" / "log.sqlite")
    return tmp_path / "run"


def test_a_version_1_log_migrates_and_its_proposals_read_with_the_new_fields(tmp_path):
    """Schema 2 adds invalid_kind, origin and cost_usd to proposals and feedback to
    evaluations, schema 3 refused_by to evaluations, schema 4 the outcome: a log written
    before them opens, is brought up to date in place, and its proposals read as the LLM's,
    their kind read out of their reason."""
    from harness_learning.harnesses.store.schema import SCHEMA_VERSION

    run = old_log(tmp_path)
    con = sqlite3.connect(run / "log.sqlite")
    for column in ("invalid_kind", "origin", "cost_usd"):
        con.execute(f"ALTER TABLE proposals DROP COLUMN {column}")
    con.execute("ALTER TABLE evaluations DROP COLUMN feedback")
    con.execute("ALTER TABLE evaluations DROP COLUMN refused_by")
    con.execute("UPDATE hl_schema SET value='1'")
    con.execute("UPDATE runs SET schema_version=1")
    con.commit()
    con.close()
    with SQLiteLogStore(run) as s:
        p = s.get_proposal("r1-c2")
        assert (p.origin, p.invalid_kind, p.cost_usd, p.valid) == ("proposer", "no_edit_found",
                                                                   0.0, False)
        assert s.get_proposal("r1-c0").outcome is None  # a draft not yet judged
        assert s.get_run().schema_version == SCHEMA_VERSION == 4
    con = sqlite3.connect(run / "log.sqlite")
    assert con.execute("SELECT value FROM hl_schema").fetchone() == ("4",)
    con.close()


def test_a_version_3_logs_verdicts_become_one_outcome_each(tmp_path):
    """Schema 4 keeps a proposal's verdict as the judge's `Outcome` in one column: each judged
    row's ten verdict columns, with the diff of its `candidate_diff` event, become it; a draft
    gets none; the old columns are gone."""
    run = old_log(tmp_path)
    con = sqlite3.connect(run / "log.sqlite")
    edit = {"fmt": "search_replace", "blocks": [{"search": "a", "replace": "b", "line": 3}]}
    con.execute("UPDATE proposals SET parsed=1, applied=1, valid=1, completed_fraction=1.0, "
                "selection_score=0.5, reward=0.8, reward_parts=?, parsed_edit=?, "
                "candidate_sha='c0' WHERE id='r1-c0'",
                (json.dumps({"task_score": 0.5}), json.dumps(edit)))
    (diff,) = [json.loads(p)["diff"] for (p,) in con.execute(
        "SELECT payload FROM events WHERE kind='candidate_diff'") if "r1-c0" in p]
    (reason,) = con.execute("SELECT invalid_reason FROM proposals WHERE id='r1-c2'").fetchone()
    completions = dict(con.execute("SELECT id, completion FROM proposals"))
    con.commit()
    con.close()
    with SQLiteLogStore(run) as s:
        got = {p.id: p for p in s.iter_proposals()}
    assert got["r1-c0"].outcome == Outcome(
        parsed=True, applied=True, valid=True, diff=diff, edit=edit, evaluated=True,
        completed_fraction=1.0, selection_score=0.5, reward=0.8,
        reward_parts={"task_score": 0.5}) and diff.startswith("---")
    assert got["r1-c2"].outcome == Outcome(
        parsed=False, applied=False, invalid_kind="no_edit_found", invalid_reason=reason,
        reward=0.0, reward_parts=got["r1-c2"].reward_parts)
    assert got["r1-c2"].reward_parts["reward"] == 0.0 and got["r1-c1"].outcome is None
    assert {p.id: p.completion for p in got.values()} == completions
    con = sqlite3.connect(run / "log.sqlite")
    names = {row[1] for row in con.execute("PRAGMA table_info(proposals)")}
    con.close()
    assert "outcome" in names and not names & set(FLAT_VERDICT)


def test_a_version_3_log_that_cannot_be_carried_forward_is_left_as_it_was(tmp_path):
    run = old_log(tmp_path)
    with sqlite3.connect(run / "log.sqlite") as con:
        con.execute("UPDATE proposals SET reward_parts='{broken' WHERE id='r1-c2'")
    with pytest.raises(LogStoreError, match="proposal reward_parts is not JSON"):
        SQLiteLogStore(run).close()
    with sqlite3.connect(run / "log.sqlite") as con:
        assert con.execute("SELECT value FROM hl_schema").fetchone() == ("3",)
        assert "reward_parts" in {row[1] for row in con.execute("PRAGMA table_info(proposals)")}


def test_a_version_1_logs_reasons_are_read_into_invalid_kind_once(tmp_path):
    """Version 1 kept only reason text; the migration reads each kind out of it, so no reader
    parses reasons. Valid and pending proposals get none; a reason with no kind head reads
    `invalid`."""
    from harness_learning.harnesses.store.schema import BACKFILL_INVALID_KIND

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE proposals (valid INTEGER, invalid_kind TEXT, invalid_reason TEXT)")
    rows = [(1, None), (0, None), (0, ""), (0, "unmatched_search: block 1 is not in the source"),
            (0, "did not complete the evaluation: harness: KeyError: 'q'"),
            (0, "Traceback (most recent call last): x"), (0, "no_build_graph: a: b")]
    con.executemany("INSERT INTO proposals (valid, invalid_reason) VALUES (?, ?)", rows)
    con.execute(BACKFILL_INVALID_KIND)
    kinds = [r[0] for r in con.execute("SELECT invalid_kind FROM proposals ORDER BY rowid")]
    assert kinds == [None, None, None, "unmatched_search", "incomplete", "invalid",
                     "no_build_graph"]


def _file_state(run: Path) -> tuple[bytes, str]:
    con = sqlite3.connect(run / "log.sqlite")
    state = con.execute("SELECT value FROM hl_schema").fetchone()[0]
    con.close()
    return (run / "log.sqlite").read_bytes(), state


def test_a_read_only_look_at_an_old_log_reads_it_migrated_and_leaves_the_file_as_it_was(
        tmp_path):
    """Reports, training data and benches look at a run without changing it: an older
    schema's log is brought up to date in memory, not in place (a look at an archived run or a
    committed fixture used to migrate it)."""
    from harness_learning.harnesses.store.schema import SCHEMA_VERSION

    run = old_log(tmp_path)
    before = _file_state(run)
    assert before[1] == "3"
    with SQLiteLogStore(run, read_only=True) as s:
        assert s.get_run().schema_version == SCHEMA_VERSION
        assert {p.id for p in s.iter_proposals()} == {"r1-c0", "r1-c1", "r1-c2"}
        with pytest.raises(LogStoreError, match="opened read-only"):
            s.append_event("tick", {"i": 1})
    assert _file_state(run) == before
    with SQLiteLogStore(run) as s:  # opened to write, it migrates as before
        assert s.get_run().schema_version == SCHEMA_VERSION
    assert _file_state(run)[1] == str(SCHEMA_VERSION)


def test_a_read_only_look_at_a_current_log_sees_a_running_writers_commits(tmp_path):
    writer = SQLiteLogStore(tmp_path / "run")
    writer.append_event("tick", {"i": 0})
    with SQLiteLogStore(tmp_path / "run", read_only=True) as reader:
        assert [e.payload["i"] for e in reader.iter_events()] == [0]
        writer.append_event("tick", {"i": 1})
        assert [e.payload["i"] for e in reader.iter_events()] == [0, 1]
        with pytest.raises(LogStoreError, match="opened read-only"):
            reader.append_event("tick", {"i": 2})
    writer.close()


@pytest.mark.parametrize("make", [
    lambda run: None,
    lambda run: (run / "log.sqlite").write_bytes(b""),
    lambda run: (run / "log.sqlite").write_bytes(b"not a database at all, just text" * 8),
], ids=["absent", "empty", "not-sqlite"])
def test_a_read_only_look_at_no_log_is_one_clear_error_and_creates_nothing(tmp_path, make):
    run = tmp_path / "run"
    run.mkdir()
    make(run)
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(LogStoreError) as raised:
        SQLiteLogStore(run, read_only=True)
    assert "log" in str(raised.value) and "\n" not in str(raised.value)
    assert sorted(p.name for p in run.iterdir() if not p.name.endswith(("-wal", "-shm"))) \
        == before

