"""Candidates counted by outcome, read from the judge's `invalid_kind`, never from reasons."""

from __future__ import annotations

from harness_learning.cli.candidate_outcomes import count_outcomes, describe_counts, outcome
from harness_learning.cli.live import LiveView

ROUND = [
    {"index": 0, "valid": True, "invalid_kind": None, "invalid_reason": None,
     "selection_score": 0.5, "sha": "a"},
    {"index": 1, "valid": False, "invalid_kind": "unmatched_search",
     "invalid_reason": "unmatched_search: block 1's SEARCH text is not in the source"},
    {"index": 2, "valid": False, "invalid_kind": "unmatched_search",
     "invalid_reason": "unmatched_search: block 2 ..."},
    {"index": 3, "valid": False, "invalid_kind": "truncated",
     "invalid_reason": "truncated: the completion was cut off"},
    {"index": 4, "valid": False, "invalid_kind": "no_build_graph",
     "invalid_reason": "no_build_graph: no top-level function"},
    {"index": 5, "valid": False, "invalid_kind": "incomplete",
     "invalid_reason": "did not complete the evaluation: harness: KeyError: 'q'"},
    {"index": 6, "valid": False, "invalid_kind": None,
     "invalid_reason": "unmatched_search: a reason alone is not read"},
]


def test_each_candidate_reads_as_its_judged_kind() -> None:
    assert [outcome(c) for c in ROUND] == ["valid", "unmatched_search", "unmatched_search",
                                          "truncated", "no_build_graph", "incomplete", "invalid"]
    assert outcome({"valid": False, "pending": True}) == "pending"


def test_counts_put_valid_first_then_the_most_frequent() -> None:
    assert describe_counts(count_outcomes(ROUND)) == (
        "1 valid, 2 unmatched_search, 1 incomplete, 1 invalid, 1 no_build_graph, 1 truncated")
    assert describe_counts(count_outcomes([])) == "none"


def test_round_table_names_why_candidates_failed() -> None:
    from rich.console import Console

    class Config:
        rounds = 1

    final = {"rounds": [{"round": 1, "feedback_score": 0.5, "current_selection_score": 0.25,
                         "candidates": ROUND[1:4], "adopted": False,
                         "decision": "every candidate failed; keeping the current version"}]}
    console = Console(width=200, record=True)
    console.print(LiveView(Config()).rounds_table(final))
    text = console.export_text()
    assert "0/3" in text and "2 unmatched_search, 1 truncated" in text
