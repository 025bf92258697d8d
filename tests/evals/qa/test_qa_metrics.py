"""The official QA metrics, case by case (HotpotQA/2Wiki vs MuSiQue rules)."""

from __future__ import annotations

import pytest

from harness_learning.evals.qa.metrics import best_metrics, exact_match, f1_score, normalize_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Beatles", "beatles"),
        ("1,000", "1000"),  # ASCII punctuation inside numbers is removed
        ("theater", "theater"),  # articles only as whole words
        ("A an THE apple", "apple"),
        ("  New\tYork\n City ", "new york city"),
        ("Café – Ñandú", "café – ñandú"),  # unicode letters and the en dash are kept
        ("\u201cquoted\u201d", "\u201cquoted\u201d"),  # curly quotes are not ASCII punctuation
        ("", ""),
        ("...", ""),
        ("U.S.A.", "usa"),
        ("an-other", "another"),  # the hyphen goes first, then "another" is one word
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_ignores_case_punctuation_articles():
    assert exact_match("the Eiffel Tower.", "Eiffel tower") == 1.0
    assert exact_match("1,000", "1000") == 1.0
    assert exact_match("1.000", "1,000") == 1.0  # both become "1000": the official behaviour
    assert exact_match("theater", "ater") == 0.0
    assert exact_match("", "") == 1.0
    assert exact_match("Paris", "") == 0.0


def test_f1_partial_overlap():
    # pred tokens: new york city; gold: new york -> p=2/3, r=1
    assert f1_score("New York City", "New York") == pytest.approx(0.8)
    assert f1_score("York New", "New York") == 1.0  # bag of tokens
    assert f1_score("x b b", "b") == pytest.approx(0.5)  # p=1/3, r=1
    assert f1_score("a b b", "b") == pytest.approx(2 / 3)  # "a" is an article: p=1/2


@pytest.mark.parametrize("rule", ["hotpotqa", "musique"])
def test_f1_no_overlap_is_zero(rule):
    assert f1_score("Berlin", "Paris", rule) == 0.0


def test_yes_no_rule_hotpotqa_and_2wiki():
    assert f1_score("yes", "yes") == 1.0
    assert f1_score("yes it is", "yes") == 0.0  # gold is yes, pred differs
    assert f1_score("no", "no way") == 0.0  # pred is no, gold differs
    assert f1_score("noanswer", "no answer") == 0.0
    assert f1_score("Yes.", "yes") == 1.0  # normalised equal


def test_yes_no_rule_absent_in_musique():
    assert f1_score("yes it is", "yes", "musique") == pytest.approx(0.5)


def test_empty_strings_differ_by_rule():
    assert f1_score("", "", "hotpotqa") == 0.0  # no common token
    assert f1_score("", "", "musique") == 1.0  # SQuAD 2.0: both empty agree
    assert f1_score("", "Paris", "musique") == 0.0
    assert f1_score("the", "Paris", "musique") == 0.0  # normalises to no tokens


def test_unknown_rule_is_an_error():
    with pytest.raises(ValueError, match="unknown F1 rule"):
        f1_score("a", "b", "squad")  # type: ignore[arg-type]


def test_best_metrics_takes_max_over_aliases():
    golds = ["G. Stanley Hall", "Stanley Hall"]
    assert best_metrics("Stanley Hall", golds) == {"em": 1.0, "f1": 1.0}
    m = best_metrics("Hall", golds)
    assert m["em"] == 0.0 and m["f1"] == pytest.approx(2 / 3)
    assert best_metrics("anything", []) == {"em": 0.0, "f1": 0.0}


def test_best_metrics_demonym_alias():
    assert best_metrics("French", ["France", "French", "Frenchman"])["em"] == 1.0
