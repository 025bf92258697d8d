"""The feedback report: content, folding, causes and the size budget."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_learning.evals.problem import Problem
from harness_learning.evals.result import EvalResult, ProblemResult
from harness_learning.graphs.adapter.execution_report import (
    build_report,
    documents_read,
    trim,
    trim_traceback,
)
from harness_learning.harnesses.contract import ExecResult, ToolCall
from harness_learning.retrieval.passage import Passage

TB = ('Traceback (most recent call last):\n  File "harness.py", line 30, in solve\n    step()\n'
      '  File "harness.py", line 12, in step\n    return state["notes"]\nKeyError: \'notes\'\n')


def qa_problem(i: int) -> Problem:
    return Problem(f"q{i}", {"question": f"Which city hosted event {i}? " + "Context words. " * 8},
                   [f"City {i}", f"Town {i}"],
                   {"answer": f"City {i}", "aliases": [f"Town {i}"], "supporting_titles": [f"Event {i}", f"City {i}"]})


def search(i: int, long: int = 1) -> ToolCall:
    return ToolCall("search", {"query": f"event {i}", "k": 2},
                    [Passage(f"Event {i}", "It was held somewhere. " * 30 * long), {"title": f"Other {i}", "text": "x"}])


def llm(reply: str, prompt: str = "Summarise the passages. " * 40) -> ToolCall:
    return ToolCall("llm", {"messages_or_prompt": [{"role": "user", "content": prompt}]}, reply)


@pytest.fixture
def case():
    problems = [qa_problem(i) for i in range(8)]
    results = [
        ProblemResult("q0", "City 0", 1.0, calls=[search(0), llm("City 0")]),
        ProblemResult("q1", "Rome", 0.0, calls=[search(1), llm("I think City 1, or Rome"), llm("Rome")]),
        ProblemResult("q2", None, 0.0, error="KeyError: 'notes'", error_kind="harness", traceback=TB),
        ProblemResult("q3", None, 0.0, error="KeyError: 'notes'", error_kind="harness", traceback=TB),
        ProblemResult("q4", None, 0.0, error="KeyError: 'notes'", error_kind="harness", traceback=TB),
        ProblemResult("q5", None, None, error="connection refused", error_kind="infra"),
        ProblemResult("q6", "The answer, after much thought about the many passages, is probably Paris", 0.0,
                      calls=[search(6, long=5), ToolCall("python", {"code": "print(1)"}, ExecResult("1\n"))]),
        ProblemResult("q7", "Town 7", 1.0, calls=[search(7), llm("Town 7")]),
    ]
    return problems, EvalResult(results)


def test_full_report_shows_what_the_proposer_needs(case):
    problems, result = case
    text = build_report(None, problems, result, budget_chars=100_000,
                        human_feedback=["Round 2: a reviewer rejected candidate 1: it hard-codes answers"])
    assert "Gold: City 1 (also accepted: Town 1)" in text
    assert "Gold supporting titles: Event 1; City 1" in text
    assert "Prediction: 'Rome'" in text
    assert "Documents read (gold found 1/2): Event 1; Other 1" in text
    assert "1. search(query='event 1', k=2) -> 2 passages: [Event 1]" in text
    assert "python(code='print(1)') -> stdout '1'" in text
    assert "[x3] q2 | error (harness)" in text and "Same failure on 2 more problem(s):" in text
    assert text.count('File "harness.py", line 12, in step') == 1  # folded, shown once
    assert "KeyError: 'notes'" in text
    assert "q5 (infra: connection refused)" in text
    assert "## Reviewer notes\n- Round 2: a reviewer rejected candidate 1" in text
    assert text.index("q2 |") < text.index("q1 |") < text.index("q0 |")  # failures first


def test_causes_are_labelled_by_simple_rules(case):
    problems, result = case
    text = build_report(None, problems, result, budget_chars=100_000)
    causes = dict(re.findall(r"### (?:\[x\d\] )?(q\d) .*likely cause: ([^\n]*)", text))
    assert causes["q2"].startswith("control flow (the harness raised)")
    assert causes["q1"] == "tool use (gold evidence not retrieved)"
    assert causes["q6"].startswith("tool use")
    assert "q0" not in causes
    assert "likely cause" not in build_report(None, problems, result, label_causes=False)


def test_a_second_hop_that_repeats_the_first_search_is_named():
    """The QA seed's second hop fell back to the question when the Solver wrote `Search query:`
    for `Query:`: the same search twice, the same passages, the gold never found."""
    twice = ProblemResult("q1", "Rome", 0.0, calls=[search(1), llm("Search query: x"), search(1),
                                                    llm("Rome")])
    other = ProblemResult("q1", "Rome", 0.0, calls=[search(1), search(2), llm("Rome")])
    causes = [re.search(r"likely cause: ([^\n]*)", build_report(None, [qa_problem(1)],
                                                                 EvalResult([r]))).group(1)
              for r in (twice, other)]
    assert causes == ["tool use (gold evidence not retrieved; a search repeated an earlier one)",
                      "tool use (gold evidence not retrieved)"]


@pytest.mark.parametrize(("kind", "cause"), [
    ("memory", "resources (passed its memory limit)"),
    ("pids", "resources (started too many processes or threads)"),
    ("timeout", "control flow (ran out of time)"),
])
def test_a_killed_run_is_labelled_by_the_limit_it_passed(kind, cause):
    p = Problem("r1", {"question": "2+2?"}, {"answer": "4"}, {"answer": "4"})
    r = ProblemResult("r1", None, 0.0, error=f"{kind}: the worker was killed", error_kind=kind)
    assert f"likely cause: {cause}" in build_report(None, [p], EvalResult([r]))


def test_an_answer_the_metric_failed_on_is_blamed_on_its_form_not_a_raise():
    p = Problem("r1", {"question": "2+2?"}, {"answer": "4"}, {"answer": "4"})
    r = ProblemResult("r1", "four-ish", 0.0, error="metric 'm.py:score' raised ValueError: bad",
                      error_kind="metric_error", calls=[llm("Answer: four-ish")])
    report = build_report(None, [p], EvalResult([r]))
    assert "likely cause: prompt (the metric could not score the answer" in report
    assert "four-ish" in report and "ValueError: bad" in report


def test_solver_said_it_but_extraction_lost_it():
    p = Problem("r1", {"question": "2+2?"}, {"answer": "4"}, {"answer": "4"})
    r = ProblemResult("r1", "four", 0.0, calls=[llm("The sum is 4. Answer: four")])
    assert "answer extraction lost it" in build_report(None, [p], EvalResult([r]))


@pytest.mark.parametrize("budget", [6000, 3000, 2000, 1400])
def test_budget_is_kept_and_every_wrong_answer_line_survives(case, budget):
    problems, result = case
    full = build_report(None, problems, result, budget_chars=100_000)
    text = build_report(None, problems, result, budget_chars=budget)
    assert len(full) > 6000 and len(text) <= budget
    for pid in ("q1", "q2", "q3", "q4", "q6"):
        line = next(x for x in text.splitlines() if pid in x)
        assert pid in line
    assert "Prediction: 'Rome'" in text and "Gold: City 1" in text
    for pid in ("q3", "q4"):
        assert re.search(rf"- {pid} \| Q: .* \| gold: City {pid[1]}.* \| predicted: \(no answer\)", text)


def test_correct_traces_are_cut_before_wrong_ones(case):
    problems, result = case
    full = build_report(None, problems, result, budget_chars=100_000)
    text = build_report(None, problems, result, budget_chars=len(full) - 1)
    q0 = text[text.index("### q0"):]
    q1 = text[text.index("### q1"):text.index("### q6")]
    assert "Calls" not in q0.split("###")[1] and "Calls (3):" in q1


def test_tiny_budget_still_keeps_wrong_answers(case):
    problems, result = case
    text = build_report(None, problems, result, budget_chars=200)
    assert all(f"{p}" in text for p in ("q1", "q2", "q3", "q4", "q6"))


def test_results_for_unknown_problems_are_refused(case):
    problems, result = case
    with pytest.raises(ValueError, match="q7"):
        build_report(None, problems[:7], result)


def test_trim_keeps_both_ends():
    s = "start " + "middle " * 100 + "end"
    t = trim(s, 60)
    assert len(t) <= 60 and t.startswith("start") and t.endswith("end")


def test_trim_traceback_keeps_last_frames_and_exception():
    lines = trim_traceback(TB, 1)
    assert lines[0] == "  ... 1 earlier frames"
    assert lines[-1] == "KeyError: 'notes'" and any("line 12" in x for x in lines)
    assert not any("line 30" in x for x in lines)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(st.text(max_size=300), st.one_of(st.none(), st.text(max_size=200)),
                               st.sampled_from([None, 0.0, 0.5, 1.0]),
                               st.sampled_from([None, "harness", "timeout", "infra"]),
                               st.text(max_size=200)), min_size=1, max_size=6),
       budget=st.integers(min_value=2500, max_value=20_000))
def test_any_results_render_within_budget(rows, budget):
    problems, results = [], []
    for i, (question, answer, score, kind, text) in enumerate(rows):
        problems.append(Problem(f"x{i}", {"question": question}, text, {"answer": text}))
        results.append(ProblemResult(f"x{i}", answer, score, error=text if kind else None, error_kind=kind,
                                     traceback=text if kind == "harness" else None,
                                     calls=[llm(text, prompt=question), ToolCall("search", text, [text])]))
    report = build_report(None, problems, EvalResult(results), budget_chars=budget)
    assert len(report) <= budget
    for r in results:
        if r.score is not None and r.score < 1.0:
            assert f"{r.problem_id} |" in report


def test_documents_read_accepts_passages_dicts_and_ignores_junk():
    r = ProblemResult("x", "a", 0.0, calls=[
        ToolCall("search", {"query": "q"}, [Passage("A", "t"), {"title": "B", "text": "t"}, "C", None]),
        ToolCall("search", {"query": "q"}, "not a list"),
        ToolCall("search", {"query": "q"}, [{"title": "A"}]),
    ])
    assert documents_read(r) == ["A", "B"]
