"""What a feedback report shows of a gold answer is read in one place (`evals.problem`): the
report's `Gold:` line and the reward-hacking guards that look for those answers cannot drift
apart, on any kind of gold a task gives."""

from __future__ import annotations

import pytest

from harness_learning.evals.guards import shown_problems
from harness_learning.evals.problem import Problem, gold_text, shown_golds
from harness_learning.evals.registry import get_task


def _golds_of_every_kind() -> list[Problem]:
    chain_sum = get_task("rg:chain_sum", n_dev=2, n_test=1, seed=0, split_secret="0" * 32)
    return [
        *chain_sum.dev(),  # gold: the generator's record; meta["answer"]: what is shown
        Problem("qa", {"question": "Who?"}, ["Ada Lovelace", "Lovelace"]),  # a list of aliases
        Problem("aliased", {"question": "When?"}, "1815",
                meta={"answer": "1815", "aliases": ["10 December 1815"]}),
        Problem("number", {"question": "How many?"}, 42),  # not text at all
    ]


@pytest.mark.parametrize("problem", _golds_of_every_kind(), ids=lambda p: p.id)
def test_each_gold_the_guards_look_for_is_on_the_reports_gold_line(problem: Problem) -> None:
    line = f"Gold: {gold_text(problem)}"
    golds = [str(g) for g in shown_golds(problem)]
    assert golds and all(golds), golds
    for gold in golds:
        assert gold in line, (gold, line)
    assert shown_problems([problem], line) == [problem]
    assert shown_problems([problem], "Gold: (not shown)") == []


def test_a_generator_record_is_never_what_a_report_shows() -> None:
    problem = get_task("rg:chain_sum", n_dev=1, n_test=1, seed=0, split_secret="0" * 32).dev()[0]
    assert isinstance(problem.gold, dict)
    assert gold_text(problem) == problem.meta["answer"]
    assert shown_golds(problem) == [problem.meta["answer"]]
