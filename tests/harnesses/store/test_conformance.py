"""The `LogStore` conformance suite: what every backend must do, run against each one.

Modelled on LangGraph's checkpoint conformance suite: the capabilities are tests written once
against the abstract interface, parametrised over `BACKENDS`. A new backend adds itself there
(given the test's request, for a server fixture, a callable from a run directory to an open
store) and must pass every test unchanged;
backend-specific behaviour (SQLite's schema record, the JSONL file's torn tail) is tested in
that backend's own module.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from jsonl_store import JsonlLogStore

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.llm import Completion
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import (
    Decision,
    Evaluation,
    LogStore,
    LogStoreError,
    Proposal,
    SQLiteLogStore,
    clean_text,
    prompt_group_id,
    proposal_id,
    source_sha,
)


def postgres(request: pytest.FixtureRequest) -> Callable[[Path], LogStore]:
    """A run directory's log in the session's throwaway PostgreSQL server (tests/conftest.py)."""
    from harness_learning.harnesses.store.postgres import PostgresLogStore

    url = request.getfixturevalue("postgres_url")
    return lambda run_dir: PostgresLogStore(run_dir, url)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Callable[[Path], LogStore]]] = {
    "sqlite": lambda _request: SQLiteLogStore,
    "jsonl": lambda _request: JsonlLogStore,
    "postgres": postgres,
}
"""Backend name -> (the test's request -> a callable from a run directory to an open store)."""


@pytest.fixture(params=sorted(BACKENDS))
def reopen(request, tmp_path) -> Callable[[], LogStore]:
    """Opens the same run directory with the backend under test (again, after a close)."""
    opened: list[LogStore] = []
    backend = BACKENDS[request.param](request)

    def open_() -> LogStore:
        store = backend(tmp_path / "run")
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(reopen) -> LogStore:
    return reopen()


def ev(sha: str, problem: str, score: float | None = 1.0, purpose: str = "selection",
       round_: int = 1, kind: str | None = None, **kw) -> Evaluation:
    return Evaluation("run", sha, purpose, round_,
                      ProblemResult(problem, "a", score, error_kind=kind, **kw))


def test_the_run_is_recorded_once(store, reopen):
    meta = store.init_run({"task": "t", "rounds": 3}, run_id="r1")
    store.close()
    again = reopen()
    assert again.get_run() == meta and again.init_run({"other": 1}) == meta
    with pytest.raises(LogStoreError, match="belongs to run 'r1'"):
        again.init_run({}, run_id="r2")


def test_versions_are_content_addressed_and_the_first_record_stays(store):
    seed = store.put_version("def build_graph(tools): ...\n", note="seed")
    child = store.put_version("def build_graph(tools): pass\n", parent=seed, round_=1)
    assert seed == source_sha("def build_graph(tools): ...\n")
    assert store.put_version("def build_graph(tools): ...\n", note="again", round_=5) == seed
    assert store.get_version(seed).note == "seed" and store.get_version(child).parent_sha == seed
    assert [v.sha for v in store.iter_versions()] == [seed, child]
    assert store.get_version("0" * 64) is None
    with pytest.raises(KeyError, match="no harness version"):
        store.get_version_source("0" * 64)


def test_evaluations_upsert_on_their_key_and_filter(store):
    store.put_evaluations([ev("s", "p1"), ev("s", "p2", kind="infra", score=None),
                           ev("s", "p1", purpose="feedback"), ev("t", "p1", round_=2)])
    store.put_evaluations([ev("s", "p2", score=0.0)])  # the retry replaces the infra row
    rows = list(store.iter_evaluations(sha="s", purpose="selection", round=1))
    assert [(r.problem_id, r.result.score, r.result.error_kind) for r in rows] == [
        ("p1", 1.0, None), ("p2", 0.0, None)]
    assert len(list(store.iter_evaluations())) == 4
    assert [r.sha for r in store.iter_evaluations(round=2)] == ["t"]


def test_get_results_skips_what_a_resumed_run_must_redo(store):
    store.put_evaluations([ev("s", "p1"), ev("s", "p2", kind="infra", score=None),
                           ev("s", "p3", kind="budget", score=None), ev("s", "p4", kind="harness",
                                                                        score=0.0)])
    done = store.get_results("s", ["p1", "p2", "p3", "p4", "p5"], "selection")
    assert sorted(done) == ["p1", "p4"] and done["p4"].error_kind == "harness"
    assert sorted(store.get_results("s", ["p1", "p2"], "selection", redo_kinds=())) == ["p1", "p2"]


def test_a_result_comes_back_equal_with_its_trace(store):
    call = ToolCall("llm", {"messages": [{"role": "user", "content": "q"}]}, "4", latency_s=0.5,
                    tokens=7)
    put = ev("s", "p1", calls=[call], tokens=7, latency_s=0.5)
    store.put_evaluations([put])
    (back,) = store.iter_evaluations()
    assert back.result == put.result and back.result.calls[0].result == "4"
    assert back.result.completed and back.problem_id == "p1"


def test_spent_counts_solver_calls_in_traces_and_proposer_tokens(store):
    llm = ToolCall("llm", {}, "x")
    store.put_evaluations([ev("s", "p1", calls=[llm, llm, ToolCall("search", {})], tokens=30),
                           ev("s", "p2", calls=[llm], tokens=5)])
    store.put_proposal(Proposal("r1-c0", 1, "g", "prompt", "edit", prompt_tokens=100,
                                completion_tokens=20))
    assert store.spent() == {"solver_calls": 3, "solver_tokens": 35, "solver_cost_usd": 0.0,
                             "proposer_calls": 1, "proposer_tokens": 120,
                             "proposer_cost_usd": 0.0, "tokens": 155, "cost_usd": 0.0}


def test_spent_sums_the_price_of_solver_calls_and_of_proposer_drafts(store):
    priced = ToolCall("llm", {}, "x", tokens=10, meta={"cost": 0.25})
    chat = ToolCall("chat", {}, "x", tokens=4, meta={"cost": 0.125})
    unpriced = ToolCall("llm", {}, "x", tokens=2, meta={"cost": None})
    search = ToolCall("search", {}, [], meta={"cost": 9.0})  # not the Solver: never counted
    store.put_evaluations([ev("s", "p1", calls=[priced, chat, unpriced, search], tokens=16)])
    paid = Completion("edit", 100, 20, 1.0, "stop", False, "m", cost=0.5)
    store.put_proposal_draft(round_=1, index=0, messages="prompt", completion=paid,
                             edit_format="search_replace")
    store.put_proposal_draft(round_=1, index=1, messages="prompt", edit_format="search_replace",
                             completion=Completion("edit", 10, 2, 1.0, "stop", False, "m"))
    spent = store.spent()
    assert spent["solver_calls"] == 3 and spent["solver_cost_usd"] == 0.375
    assert spent["proposer_calls"] == 2 and spent["proposer_cost_usd"] == 0.5
    assert spent["cost_usd"] == 0.875 and spent["tokens"] == 16 + 120 + 12
    (event,) = store.iter_events(kinds=["proposer_cost"])
    assert event.payload == {"proposal_id": "r1-c0", "round": 1, "cost_usd": 0.5}


def test_a_proposal_is_drafted_then_judged(store):
    done = Completion(text="<edit>", prompt_tokens=3, completion_tokens=4, latency_s=0.1,
                      finish_reason="stop", cached=False, model="m")
    messages = [{"role": "user", "content": "improve it"}]
    draft = store.put_proposal_draft(round_=1, index=0, messages=messages, completion=done,
                                     edit_format="search_replace", parent_sha="p")
    assert draft.group_id == prompt_group_id(messages) and draft.completion == "<edit>"
    store.update_proposal(draft.id, parsed=True, applied=True, valid=False,
                                  invalid_reason="unchanged", reward=0.0,
                                  reward_parts={"parse": 0.05})
    got = store.get_proposal(proposal_id(1, 0))
    assert (got.parsed, got.applied, got.valid, got.invalid_reason) == (True, True, False,
                                                                        "unchanged")
    assert got.reward_parts == {"parse": 0.05} and got.prompt == messages
    with pytest.raises(ValueError, match="unknown proposal fields"):
        store.update_proposal(draft.id, flavour="x")
    with pytest.raises(KeyError):
        store.update_proposal("r9-c9", valid=True)


def test_proposals_group_by_the_prompt_they_answered(store):
    for i, prompt in enumerate(["A", "B", "A"]):
        store.put_proposal(Proposal(f"r1-c{i}", 1, prompt_group_id(prompt), prompt, f"e{i}"))
    store.put_proposal(Proposal("r2-c0", 2, prompt_group_id("A"), "A", "late"))
    groups = list(store.iter_proposal_groups(round=1))
    assert [(g.prompt, [p.id for p in g.proposals]) for g in groups] == [
        ("A", ["r1-c0", "r1-c2"]), ("B", ["r1-c1"])]
    assert [p.id for p in store.iter_proposals()] == ["r1-c0", "r1-c1", "r1-c2", "r2-c0"]


def test_decisions_upsert_by_round_and_make_the_lineage(store):
    seed = store.put_version("seed\n")
    better = store.put_version("better\n", parent=seed, round_=1)
    store.put_decision(round_=2, current_sha=better, chosen_sha=better, policy="strict",
                       scores={"current": 0.5, "chosen": 0.5})
    store.put_decision(Decision(1, seed, better, "strict", "first try", {"current": 0.2}))
    store.put_decision(Decision(1, seed, better, "strict", "higher", {"current": 0.25,
                                                                     "chosen": 0.5}))
    assert [(d.round, d.reason) for d in store.iter_decisions()] == [(1, "higher"), (2, "")]
    assert [tuple(s) for s in store.lineage()] == [(0, seed, 0.25), (1, better, 0.5),
                                                   (2, better, 0.5)]


def test_events_append_in_order_and_filter(store):
    seqs = [store.append_event(kind, {"i": i}) for i, kind in enumerate("abab")]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert [e.payload["i"] for e in store.iter_events(kinds=["b"])] == [1, 3]
    assert [e.kind for e in store.iter_events(after_seq=seqs[1])] == ["a", "b"]


def test_everything_comes_back_after_a_reopen(store, reopen):
    store.init_run({"k": 1})
    sha = store.put_version("src\n")
    store.put_evaluations([ev(sha, "p1", calls=[ToolCall("llm", {"q": [1, 2]})])])
    store.put_proposal(Proposal("r1-c0", 1, "g", [{"role": "user", "content": "x"}], "e",
                                valid=True, reward_parts={"a": [1, 2]}, logprobs=[-0.5]))
    store.put_decision(round_=1, current_sha=sha, chosen_sha=sha, policy="strict")
    store.append_event("run_finished", {"reason": "rounds"})
    before = (store.get_run(), list(store.iter_versions()), list(store.iter_evaluations()),
              list(store.iter_proposals()), list(store.iter_decisions()), list(store.iter_events()))
    store.close()
    again = reopen()
    after = (again.get_run(), list(again.iter_versions()), list(again.iter_evaluations()),
             list(again.iter_proposals()), list(again.iter_decisions()), list(again.iter_events()))
    assert after == before


def test_odd_text_and_nan_are_stored_not_refused(store):
    store.put_evaluations([Evaluation("run", "s", "selection", 1,
                                      ProblemResult("p", "bad \ud800 text", math.nan))])
    (back,) = store.iter_evaluations()
    answer = back.result.answer
    assert answer == clean_text("bad \ud800 text") and "\ud800" not in answer
    assert answer.startswith("bad \ufffd") and back.result.score is None


def test_the_async_twins_do_what_the_sync_methods_do(store):
    async def go():
        sha = await store.aput_version("src\n")
        await store.aput_results(sha, "selection", 1,
                                 [ProblemResult("p1", "4", 1.0, latency_s=0.1, tokens=3)])
        await store.aput_decision(round_=1, current_sha=sha, chosen_sha=sha, policy="strict")
        seq = await store.aappend_event("x")
        return (sha, await store.aget_version_source(sha),
                await store.aget_results(sha, ["p1"], "selection"), await store.alineage(),
                await store.aspent(), seq)

    sha, source, results, lineage, spent, seq = asyncio.run(go())
    assert source == "src\n" and results["p1"].score == 1.0 and results["p1"].answer == "4"
    assert lineage[-1].sha == sha and spent["solver_tokens"] == 3 and seq >= 1

