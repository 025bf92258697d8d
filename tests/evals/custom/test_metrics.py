"""Each metric of a task of one's own, and each way a metric can be given wrongly."""

from __future__ import annotations

import pytest

from harness_learning.evals.custom.metrics import (
    JUDGE_RUBRIC,
    MetricError,
    check_score,
    last_number,
    parse_grade,
    parse_metric,
)

EX = {"question": "q"}


def score(spec: str, prediction: str, *golds) -> float:
    return parse_metric(spec).score(prediction, list(golds), {**EX, "answer": golds[0]})


def test_exact_normalises_case_punctuation_and_articles():
    assert score("exact", "The Eiffel Tower.", "eiffel tower") == 1.0
    assert score("exact", "the tower in Paris", "eiffel tower") == 0.0
    assert score("exact", "Paris", "Lyon", "paris") == 1.0  # best over `answers`


def test_f1_gives_partial_credit():
    assert score("f1", "eiffel tower paris", "eiffel tower") == pytest.approx(0.8)
    assert score("f1", "louvre", "eiffel tower") == 0.0


def test_contains_needs_whole_words():
    assert score("contains", "I think it is Paris, France", "paris") == 1.0
    assert score("contains", "Parisian", "paris") == 0.0


def test_numeric_takes_the_last_number_within_tolerance():
    assert score("numeric", "3 apples at 0.40 make 1.20", "1.2") == 1.0
    assert score("numeric", "1,200 euros", "1200") == 1.0
    assert score("numeric", "1.21", "1.2") == 0.0
    assert score("numeric:0.01", "1.21", "1.2") == 1.0
    assert score("numeric:0.01", "no number here", "1.2") == 0.0


def test_numeric_rejects_a_bad_tolerance_and_a_non_numeric_gold():
    with pytest.raises(MetricError, match="REL_TOL must be a number >= 0"):
        parse_metric("numeric:lots")
    with pytest.raises(MetricError, match="gold answer 'abc' is not a number"):
        score("numeric", "3", "abc")


def test_regex_matches_the_whole_answer():
    assert score("regex", " 2026-12-01 ", r"\d{4}-\d{2}-\d{2}") == 1.0
    assert score("regex", "on 2026-12-01", r"\d{4}-\d{2}-\d{2}") == 0.0
    with pytest.raises(MetricError, match="gold pattern .* is invalid"):
        score("regex", "x", "(unclosed")


def test_json_scores_key_by_key():
    gold = {"city": "Paris", "year": 1889}
    assert score("json", '{"city": "paris", "year": 1889}', gold) == 1.0
    assert score("json", 'Here: {"city": "Paris", "year": 1900} done', gold) == 0.5
    assert score("json", '{"city": "Paris"}', '{"city": "Paris", "year": 1889}') == 0.5
    assert score("json", "not json", gold) == 0.0


def test_a_callable_metric_gets_prediction_gold_and_example(tmp_path):
    module = tmp_path / "my_metric.py"
    module.write_text("def half(prediction, gold, example):\n"
                      "    '''Half credit for the right length.'''\n"
                      "    return 0.5 if len(prediction) == len(gold) + example['pad'] else 0.0\n")
    metric = parse_metric(f"{module}:half")
    assert metric.score("abcd", ["ab"], {"answer": "ab", "pad": 2}) == 0.5
    assert "Half credit for the right length" in metric.description


def test_unknown_metrics_name_the_known_ones(tmp_path):
    with pytest.raises(MetricError, match="unknown metric 'bleu'; known: exact, f1"):
        parse_metric("bleu")
    with pytest.raises(ImportError, match="importing 'no_such_module_xyz' failed"):
        parse_metric("no_such_module_xyz:score")
    (tmp_path / "m.py").write_text("score = 3\n")
    with pytest.raises(MetricError, match="is a int, not a callable"):
        parse_metric(f"{tmp_path / 'm.py'}:score")
    with pytest.raises(MetricError, match="judge:MODEL' needs a model"):
        parse_metric("judge:")


def test_check_score_refuses_values_outside_the_unit_interval():
    assert check_score(True, "m") == 1.0
    for bad in (1.5, -0.1, float("nan"), "0.5", None):
        with pytest.raises(MetricError, match="must return a number in \\[0, 1\\]"):
            check_score(bad, "m")


def test_last_number_and_judge_grades():
    assert last_number("from 3 to -4.5e1") == -45.0 and last_number("none") is None
    assert parse_grade("INCORRECT.") == 0.0 and parse_grade("partial") == 0.5
    assert parse_grade("Grade: correct") is None and parse_grade("maybe") is None
    assert "data" in JUDGE_RUBRIC and "ignore" in JUDGE_RUBRIC


def test_a_metric_may_return_feedback_that_reaches_the_report(tmp_path):
    """GEPA-style metrics: (score, text) or {"score", "feedback"}; the evaluator keeps the text
    with the problem's result and the Proposer's report shows it. A malformed one is one error."""
    from harness_learning.evals.evaluator import to_result
    from harness_learning.evals.registry import get_task
    from harness_learning.evals.result import EvalResult, Graded, ProblemResult
    from harness_learning.graphs.adapter.execution_report import build_report

    graded = check_score((0.5, "off by one"), "m")
    assert isinstance(graded, Graded) and graded == 0.5 and graded.feedback == "off by one"
    assert check_score({"score": 1, "feedback": "ok"}, "m").feedback == "ok"
    for bad in ((0.5, 3), {"score": 1}, (0.5, "a", "b"), (2.0, "too big")):
        with pytest.raises(MetricError, match="metric 'm' returned"):
            check_score(bad, "m")
    (tmp_path / "fb.py").write_text(
        "def score(prediction, gold, example):\n"
        "    if prediction == gold:\n        return 1.0, 'right'\n"
        "    return {'score': 0.0, 'feedback': f'wanted a number like {len(gold)} digits'}\n")
    rows = "\n".join(f'{{"question": "q{i}", "answer": "{i}0"}}' for i in range(6))
    (tmp_path / "d.jsonl").write_text(rows + "\n")
    task = get_task(str(tmp_path / "d.jsonl"), metric=f"{tmp_path / 'fb.py'}:score", n_dev=4,
                    n_test=2)
    problem = task.dev()[0]
    result = to_result(problem, ProblemResult(problem.id, answer="nope"), task)
    assert result.score == 0.0 and result.feedback == "wanted a number like 2 digits"
    report = build_report(task, [problem], EvalResult([result]), budget_chars=20_000)
    assert "Metric feedback: 'wanted a number like 2 digits'" in report
