"""What every `LogStore` backend must do, as checks a backend runs against its own factory, as
LangGraph's checkpoint conformance suite is reused by other savers.

Each check takes `open_store`, a callable that opens the same (initially empty) run's log each
time it is called, so a check can close the store and read it back; the check closes what it
opens. A check raises `ConformanceError` (an AssertionError) saying what differed. With pytest:

    from harness_learning.harnesses.store.conformance import CHECKS

    @pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
    def test_my_store_conforms(check, tmp_path):
        check(lambda: MyLogStore(tmp_path / "run"))

Backend-specific behaviour (a file's schema record, a torn tail) is the backend's own tests'.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.llm.completion import Completion
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store.base import LogStore, LogStoreError
from harness_learning.harnesses.store.records import (
    Decision,
    Evaluation,
    Outcome,
    Proposal,
    clean_text,
    new_proposal,
    prompt_group_id,
    proposal_id,
    source_sha,
)

Opener = Callable[[], LogStore]
Check = Callable[[Opener], None]
CHECKS: list[Check] = []
"""Every check, in the order written."""


class ConformanceError(AssertionError):
    """A backend did not do what a `LogStore` must."""


def expect(got: object, want: object, what: str) -> None:
    if got != want:
        raise ConformanceError(f"{what}: got {got!r}, expected {want!r}")


def expect_raises(kind: type[BaseException], text: str, call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except kind as exc:
        if text not in str(exc):
            raise ConformanceError(f"{what}: {kind.__name__} without {text!r}: {exc}") from exc
        return
    raise ConformanceError(f"{what}: no {kind.__name__} raised")


def check(body: Callable[[Opener], None]) -> Check:
    """Register `body` in `CHECKS`; every store it opens is closed after it, whatever happens."""

    @functools.wraps(body)
    def run(open_store: Opener) -> None:
        opened: list[LogStore] = []

        def reopen() -> LogStore:
            opened.append(open_store())
            return opened[-1]

        try:
            body(reopen)
        finally:
            for store in opened:
                store.close()

    CHECKS.append(run)
    return run


def ev(sha: str, problem: str, score: float | None = 1.0, purpose: str = "selection",
       round_: int = 1, kind: str | None = None, **result: Any) -> Evaluation:
    return Evaluation("run", sha, purpose, round_,
                      ProblemResult(problem, "a", score, error_kind=kind, **result))


def completion(text: str = "edit", prompt_tokens: int = 10, completion_tokens: int = 2,
               cost: float | None = None) -> Completion:
    return Completion(text, prompt_tokens, completion_tokens, 0.1, "stop", False, "m", cost=cost)


@check
def the_run_is_recorded_once(reopen: Opener) -> None:
    store = reopen()
    meta = store.init_run({"task": "t", "rounds": 3}, run_id="r1")
    store.close()
    again = reopen()
    expect(again.get_run(), meta, "the run read back")
    expect(again.init_run({"other": 1}), meta, "the run initialised again")
    expect_raises(LogStoreError, "belongs to run 'r1'", lambda: again.init_run({}, run_id="r2"),
                  "another run's id")


@check
def versions_are_content_addressed_and_the_first_record_stays(reopen: Opener) -> None:
    store = reopen()
    seed = store.put_version("def build_graph(tools): ...\n", note="seed")
    child = store.put_version("def build_graph(tools): pass\n", parent=seed, round_=1)
    expect(seed, source_sha("def build_graph(tools): ...\n"), "a version's sha")
    expect(store.put_version("def build_graph(tools): ...\n", note="again", round_=5), seed,
           "the sha of a source put again")
    expect((store.get_version(seed).note, store.get_version(child).parent_sha), ("seed", seed),
           "(the first note, the child's parent)")
    expect([v.sha for v in store.iter_versions()], [seed, child], "versions in insertion order")
    expect(store.get_version("0" * 64), None, "an unknown version")
    expect_raises(KeyError, "no harness version", lambda: store.get_version_source("0" * 64),
                  "the source of an unknown version")


@check
def evaluations_upsert_on_their_key_and_filter(reopen: Opener) -> None:
    store = reopen()
    store.put_evaluations([ev("s", "p1"), ev("s", "p2", kind="infra", score=None),
                           ev("s", "p1", purpose="feedback"), ev("t", "p1", round_=2)])
    store.put_evaluations([ev("s", "p2", score=0.0)])  # the retry replaces the infra row
    rows = list(store.iter_evaluations(sha="s", purpose="selection", round=1))
    expect([(r.problem_id, r.result.score, r.result.error_kind) for r in rows],
           [("p1", 1.0, None), ("p2", 0.0, None)], "selection rows after the retry")
    expect(len(list(store.iter_evaluations())), 4, "rows in all")
    expect([r.sha for r in store.iter_evaluations(round=2)], ["t"], "round 2's rows")


@check
def get_results_skips_what_a_resumed_run_must_redo(reopen: Opener) -> None:
    store = reopen()
    store.put_evaluations([ev("s", "p1"), ev("s", "p2", kind="infra", score=None),
                           ev("s", "p3", kind="budget", score=None),
                           ev("s", "p4", kind="harness", score=0.0)])
    done = store.get_results("s", ["p1", "p2", "p3", "p4", "p5"], "selection")
    expect(sorted(done), ["p1", "p4"], "finished results")
    expect(done["p4"].error_kind, "harness", "a harness error's kind")
    expect(sorted(store.get_results("s", ["p1", "p2"], "selection", redo_kinds=())),
           ["p1", "p2"], "results with nothing to redo")


@check
def a_result_comes_back_equal_with_its_trace(reopen: Opener) -> None:
    store = reopen()
    call = ToolCall("llm", {"messages": [{"role": "user", "content": "q"}]}, "4", latency_s=0.5,
                    tokens=7)
    store.put_results("s", "selection", 1, [ProblemResult("p1", "4", 1.0, calls=[call],
                                                          tokens=7, latency_s=0.5)])
    back = store.get_results("s", ["p1"], "selection")["p1"]
    expect(back, ProblemResult("p1", "4", 1.0, calls=[call], tokens=7, latency_s=0.5),
           "the result read back")
    (row,) = store.iter_evaluations()
    expect((row.run_id, row.round), (store.get_run().run_id, 1), "(run id, round) of its row")


@check
def spent_counts_solver_calls_in_traces_and_proposer_calls(reopen: Opener) -> None:
    store = reopen()
    llm = ToolCall("llm", {}, "x")
    store.put_evaluations([ev("s", "p1", calls=[llm, llm, ToolCall("search", {})], tokens=30),
                           ev("s", "p2", calls=[llm], tokens=5)])
    store.put_proposal(Proposal("r1-c0", 1, "g", "prompt", "edit", prompt_tokens=100,
                                completion_tokens=20))
    store.put_proposal(Proposal("r1-c1", 1, "g", "note", "program", origin="operator:x"))
    for attempt in ("sample", "resample", "repair"):  # the second chances are calls too
        store.append_event("proposer_attempt", {"round": 1, "index": 0, "attempt": attempt})
    store.append_event("other", {"attempt": "repair"})
    expect(store.spent(), {"solver_calls": 3, "solver_tokens": 35, "solver_cost_usd": 0.0,
                           "proposer_calls": 3, "proposer_tokens": 120,
                           "proposer_cost_usd": 0.0, "tokens": 155, "cost_usd": 0.0}, "spent")


@check
def spent_sums_the_price_of_solver_calls_and_of_proposer_calls(reopen: Opener) -> None:
    store = reopen()
    priced = ToolCall("llm", {}, "x", tokens=10, meta={"cost": 0.25})
    chat = ToolCall("chat", {}, "x", tokens=4, meta={"cost": 0.125})
    unpriced = ToolCall("llm", {}, "x", tokens=2, meta={"cost": None})
    search = ToolCall("search", {}, [], meta={"cost": 9.0})  # not the Solver: never counted
    store.put_evaluations([ev("s", "p1", calls=[priced, chat, unpriced, search], tokens=16)])
    for cost in (0.5, None, 0.0, 0.25):  # only priced calls are recorded
        store.record_proposer_cost(proposal_id(1, 0), 1, cost)
    store.put_proposal(new_proposal(1, 0, "prompt", completion("edit", 100, 20, cost=0.25),
                                    "search_replace"))
    spent = store.spent()
    expect((spent["solver_calls"], spent["solver_cost_usd"]), (3, 0.375), "the Solver's spend")
    expect((spent["proposer_calls"], spent["proposer_cost_usd"]), (1, 0.75), "the Proposer's")
    expect((spent["cost_usd"], spent["tokens"]), (1.125, 16 + 120), "the total")
    expect([e.payload for e in store.iter_events(kinds=["proposer_cost"])],
           [{"proposal_id": "r1-c0", "round": 1, "cost_usd": c} for c in (0.5, 0.25)],
           "the recorded prices")


@check
def a_proposal_is_put_when_drawn_then_settled_once(reopen: Opener) -> None:
    store = reopen()
    messages = [{"role": "user", "content": "improve it"}]
    drawn = new_proposal(1, 0, messages, completion("<edit>", 3, 4), "search_replace",
                         parent_sha="p", parent_score=0.25)
    store.put_proposal(drawn)
    got = store.get_proposal(proposal_id(1, 0))
    expect((got.id, got.group_id, got.completion, got.completion_tokens, got.parent_score),
           ("r1-c0", prompt_group_id(messages), "<edit>", 4, 0.25), "the drawn proposal")
    expect((got.outcome, got.reward, got.valid, got.reward_parts), (None, None, False, {}),
           "a proposal not yet judged")
    verdict = Outcome(parsed=True, applied=True, unchanged=True, invalid_kind="unchanged",
                      invalid_reason="unchanged: no change", new_source="src\n", diff="-a\n+b",
                      edit={"fmt": "search_replace", "blocks": []}, reward=0.0,
                      reward_parts={"parse": 0.05, "unchanged": True})
    store.settle_proposal(drawn.id, "sha1", verdict)
    store.settle_proposal(drawn.id, None, Outcome(parsed=False, applied=False, reward=1.0))
    store.close()
    store = reopen()
    got = store.get_proposal(drawn.id)
    expect((got.outcome, got.candidate_sha), (replace(verdict, new_source=None), "sha1"),
           "the first verdict read back (without the source, which is the version's)")
    expect((got.parsed, got.valid, got.invalid_kind, got.reward, got.parsed_edit, got.prompt),
           (True, False, "unchanged", 0.0, verdict.edit, messages), "the verdict's fields")
    expect_raises(KeyError, "r9-c9", lambda: store.settle_proposal("r9-c9", None, verdict),
                  "an unknown proposal")


@check
def proposals_group_by_the_prompt_they_answered(reopen: Opener) -> None:
    store = reopen()
    for i, prompt in enumerate(["A", "B", "A"]):
        store.put_proposal(Proposal(f"r1-c{i}", 1, prompt_group_id(prompt), prompt, f"e{i}"))
    store.put_proposal(Proposal("r2-c0", 2, prompt_group_id("A"), "A", "late"))
    groups = list(store.iter_proposal_groups(round=1))
    expect([(g.prompt, [p.id for p in g.proposals]) for g in groups],
           [("A", ["r1-c0", "r1-c2"]), ("B", ["r1-c1"])], "round 1's groups")
    expect([p.id for p in store.iter_proposals()], ["r1-c0", "r1-c1", "r1-c2", "r2-c0"],
           "proposals in insertion order")


@check
def decisions_upsert_by_round_and_make_the_lineage(reopen: Opener) -> None:
    store = reopen()
    seed = store.put_version("seed\n")
    better = store.put_version("better\n", parent=seed, round_=1)
    store.put_decision(round_=2, current_sha=better, chosen_sha=better, policy="strict",
                       scores={"current": 0.5, "chosen": 0.5})
    store.put_decision(Decision(1, seed, better, "strict", "first try", {"current": 0.2}))
    store.put_decision(Decision(1, seed, better, "strict", "higher", {"current": 0.25,
                                                                     "chosen": 0.5}))
    expect([(d.round, d.reason) for d in store.iter_decisions()], [(1, "higher"), (2, "")],
           "decisions by round")
    expect([tuple(s) for s in store.lineage()], [(0, seed, 0.25), (1, better, 0.5),
                                                 (2, better, 0.5)], "the lineage")


@check
def events_append_in_order_and_filter(reopen: Opener) -> None:
    store = reopen()
    seqs = [store.append_event(kind, {"i": i}) for i, kind in enumerate("abab")]
    expect((seqs == sorted(seqs), len(set(seqs))), (True, 4), "(sequence ascending, distinct)")
    expect([e.payload["i"] for e in store.iter_events(kinds=["b"])], [1, 3], "kind b's events")
    expect([e.kind for e in store.iter_events(after_seq=seqs[1])], ["a", "b"],
           "the events after the second")


@check
def everything_comes_back_after_a_reopen(reopen: Opener) -> None:
    store = reopen()
    store.init_run({"k": 1})
    sha = store.put_version("src\n")
    store.put_evaluations([ev(sha, "p1", calls=[ToolCall("llm", {"q": [1, 2]})])])
    store.put_proposal(Proposal("r1-c0", 1, "g", [{"role": "user", "content": "x"}], "e",
                                logprobs=[-0.5]))
    store.put_proposal(Proposal("r1-c1", 1, "g", "note", "e", candidate_sha=sha, outcome=Outcome(
        parsed=True, applied=True, valid=True, evaluated=True, completed_fraction=1.0,
        selection_score=0.5, reward=0.75, reward_parts={"a": [1, 2]})))
    store.put_decision(round_=1, current_sha=sha, chosen_sha=sha, policy="strict")
    store.append_event("run_finished", {"reason": "rounds"})

    def everything(s: LogStore) -> tuple[Any, ...]:
        return (s.get_run(), list(s.iter_versions()), list(s.iter_evaluations()),
                list(s.iter_proposals()), list(s.iter_decisions()), list(s.iter_events()))

    before = everything(store)
    store.close()
    expect(everything(reopen()), before, "the log read again")


@check
def odd_text_and_nan_are_stored_not_refused(reopen: Opener) -> None:
    store = reopen()
    store.put_evaluations([Evaluation("run", "s", "selection", 1,
                                      ProblemResult("p", "bad \ud800 text", math.nan))])
    (back,) = store.iter_evaluations()
    expect(back.result.answer, clean_text("bad \ud800 text"), "text with a lone surrogate")
    expect(back.result.answer.startswith("bad \ufffd"), True, "the surrogate replaced")
    expect(back.result.score, None, "a NaN score")


@check
def the_async_twins_do_what_the_sync_methods_do(reopen: Opener) -> None:
    store = reopen()

    async def go() -> tuple[Any, ...]:
        sha = await store.aput_version("src\n")
        await store.aput_results(sha, "selection", 1,
                                 [ProblemResult("p1", "4", 1.0, latency_s=0.1, tokens=3)])
        await store.aput_decision(round_=1, current_sha=sha, chosen_sha=sha, policy="strict")
        draft = new_proposal(1, 0, "m", completion(), "function")
        await store.aput_proposal(draft)
        await store.asettle_proposal(draft.id, sha, Outcome(parsed=True, applied=True, valid=True))
        await store.arecord_proposer_cost(draft.id, 1, 0.5)
        seq = await store.aappend_event("x")
        return (sha, await store.aget_version_source(sha),
                await store.aget_results(sha, ["p1"], "selection"), await store.alineage(),
                await store.aspent(), await store.aget_proposal(draft.id), seq)

    sha, source, results, lineage, spent, proposal, seq = asyncio.run(go())
    expect((source, results["p1"].score, results["p1"].answer), ("src\n", 1.0, "4"),
           "a version and a result through the twins")
    expect((lineage[-1].sha, spent["solver_tokens"], spent["proposer_cost_usd"]), (sha, 3, 0.5),
           "the lineage and spend through the twins")
    expect((proposal.valid, seq == list(store.iter_events())[-1].seq), (True, True),
           "a proposal and an event through the twins")
