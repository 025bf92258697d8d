"""`bench qa-floor`: the failure stages read from hand-built traces, the table, and the resume."""

from __future__ import annotations

import json

import pytest

from harness_learning_lab.bench import qa_floor
from harness_learning_lab.bench.qa_floor_failures import (
    contains,
    failure_stage,
    gold_recall,
    repeats_a_query,
    summaries,
)


def trace(answer, gold, passages=(), notes=(), titles=("Paris",), em=0.0, error_kind=None):
    """A two-hop run as the trace records it: a search per passage list, a Solver reply per
    note, then the answer call."""
    calls = [{"tool": "search", "args": {"query": "q", "k": 5},
              "result": [{"title": t, "text": x, "score": 1.0} for t, x in passages]}]
    calls += [{"tool": "llm", "args": {"messages": "..."}, "result": n} for n in notes]
    calls.append({"tool": "llm", "args": {"messages": "..."}, "result": f"Answer: {answer}"})
    return {"em": em, "f1": 0.0, "gold": list(gold), "supporting_titles": list(titles),
            "type": "bridge", "result": {"answer": answer, "error_kind": error_kind,
                                         "latency_s": 10.0, "calls": calls}}


FRANCE = [("Paris", "Paris is the capital of France."), ("Lyon", "Lyon lies on the Rhone.")]


@pytest.mark.parametrize(("row", "stage"), [
    (trace("Paris", ["Paris"], FRANCE, ["The capital is Paris."], em=1.0), "correct"),
    (trace(None, ["Paris"], FRANCE, error_kind="harness"), "error"),
    (trace("Lyon", ["Marseille"], FRANCE, ["Lyon"]), "not_retrieved"),
    (trace("Lyon", ["Paris"], FRANCE, ["It is about Lyon."]), "lost_in_summary"),
    (trace("Paris, the capital of France", ["Paris"], FRANCE, ["Paris"]), "span_too_long"),
    (trace("Lyon", ["Paris"], FRANCE, ["Paris or Lyon"]), "other"),
    (trace("yes", ["Paris"], FRANCE, ["Paris"]), "yes_no"),
    (trace("1922", ["5 May 1921"], [("Paris", "Founded on 5 May 1921.")], ["5 May 1921"]),
     "date"),
    # a yes/no gold is never in a passage: judged on the gold titles, then on the output
    (trace("Canada", ["no"], FRANCE, ["Canada"], titles=("Paris", "Lyon")), "yes_no"),
    (trace("yes", ["no"], FRANCE, ["Canada"], titles=("Paris", "Sydney")), "not_retrieved"),
])
def test_each_failure_stage_is_read_from_the_trace(row, stage) -> None:
    assert failure_stage(row) == stage


def test_matching_is_on_whole_normalised_words_and_recall_on_gold_titles() -> None:
    assert contains("The Ed Sullivan Show", "ed sullivan") and not contains("Edward", "Ed")
    assert contains("born in U.S.A.", "USA") and not contains("anything", "")
    row = trace("Lyon", ["Paris"], FRANCE, ["a", "b"], titles=("Paris", "Sydney"))
    assert gold_recall(row) == 0.5 and summaries(row) == ["a", "b"]  # the answer call is not one
    assert gold_recall(trace("x", ["y"], FRANCE, titles=())) == 1.0


def test_a_hop_that_searches_an_earlier_query_again_is_counted() -> None:
    row = trace("Lyon", ["Paris"], FRANCE, ["a"])
    assert not repeats_a_query(row)
    row["result"]["calls"].insert(2, {"tool": "search", "args": {"query": "Q.", "k": 5},
                                      "result": []})
    assert repeats_a_query(row)  # "Q." is "q" once normalised


def test_the_summary_counts_stages_and_types_and_the_table_shows_them() -> None:
    rows = [trace("Paris", ["Paris"], FRANCE, ["Paris"], em=1.0),
            trace("Lyon", ["Paris"], FRANCE, ["Lyon"]),
            trace("Lyon", ["Marseille"], FRANCE, ["Lyon"], titles=("Paris", "Marseille"))]
    rows[0]["f1"] = 1.0
    line = qa_floor.summary("2wiki", rows)
    assert line["n"] == 3 and line["em"] == pytest.approx(0.333) and line["s_per_problem"] == 10.0
    assert line["em_ci95"][0] <= line["em"] <= line["em_ci95"][1]
    assert line["stages"]["correct"] == 1 and line["stages"]["lost_in_summary"] == 1
    assert line["stages"]["not_retrieved"] == 1 and line["gold_recall"] == pytest.approx(0.833)
    assert line["em_by_type"] == {"bridge": [0.333, 3]}
    text = qa_floor.table([line])
    assert line["repeated_query"] == 0
    assert "| 2wiki | 3 | 10.0 | 0.333 [" in text and "| 2wiki | 1 | 0 | 1 | 1 |" in text


def test_problem_files_are_distinct_for_ids_that_differ_only_in_unsafe_characters(tmp_path) -> None:
    a, b = qa_floor.record_path(tmp_path, "musique", "2hop/a"), qa_floor.record_path(tmp_path, "musique", "2hop:a")
    assert a != b and a.parent == b.parent == tmp_path / "musique"


@pytest.mark.slow
def test_finished_problems_are_not_run_again(tmp_path, data_dir, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(data_dir))
    task = qa_floor.task_with_index("2wiki", tmp_path, 2)
    for problem in task.test()[:2]:
        path = qa_floor.record_path(tmp_path, "2wiki", problem.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(trace("Paris", problem.gold, FRANCE, ["Paris"], em=1.0)))
    logged: list[str] = []
    lines = qa_floor.run(["2wiki"], 2, tmp_path, "nobody:no-model", {}, log=logged.append)
    assert logged == ["2wiki: 2 of 2 done, 0 to run"]  # no model was asked
    assert lines[0]["n"] == 2 and lines[0]["em"] == 1.0
    assert json.loads((tmp_path / "summary.json").read_text()) == lines

