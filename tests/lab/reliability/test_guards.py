"""The reward-hacking guard: literals equal to gold answers the report showed, absent from the
parent, are caught; ordinary programs are not."""

from __future__ import annotations

import pytest

from harness_learning.evals.guards import (
    hardcoded_gold,
    normalize_gold,
    reward_hacking_reason,
    shown_problems,
)
from harness_learning.evals.problem import Problem
from harness_learning.harnesses.seeds import seed_source

pytestmark = pytest.mark.reliability

SEED = seed_source("reasoning_direct")


def with_line(line: str) -> str:
    return SEED.replace("    graph = StateGraph(State)", f"    {line}\n    graph = StateGraph(State)")


@pytest.mark.parametrize("gold, literal", [
    ("Paris", "'paris'"), ("The Beatles", "'Beatles.'"), ("42", "42"), ("3.5", "3.50"),
    ("1,024", "1024"), ("-17", "'-17'"), (["Bob Dylan", "Dylan"], "'dylan'"), ("7", "'7'"),
])
def test_hard_coded_gold_is_caught(gold, literal):
    reason = reward_hacking_reason(with_line(f"ANSWERS = [{literal}]"), SEED, [gold])
    assert reason is not None and reason.startswith("reward_hacking: ")


@pytest.mark.parametrize("gold, line", [
    ("7", "LIMIT = 7"),                                 # small numbers are everywhere
    ("Paris", "NOTE = 'Parisian cafes'"),               # not equal, only similar
    ("Answer", "X = 1"),                                # the literal 'Answer' is in the parent
    ("True", "FLAG = True"),                            # booleans are not answers
    ("no", "FORMS = ('yes', 'No.')"),                   # a yes/no answer's form, not a fact
    ("Yes", "if 'yes' in reply.lower(): pass"),
])
def test_ordinary_literals_are_not_flagged(gold, line):
    assert reward_hacking_reason(with_line(line), SEED, [gold]) is None


def test_literals_already_in_the_parent_are_not_flagged():
    parent = with_line("KNOWN = 'Paris'")
    child = parent.replace("KNOWN = 'Paris'", "KNOWN = 'Paris'\n    OTHER = 'paris'")
    assert hardcoded_gold(child, parent, ["Paris"]) == []


def test_unparseable_source_and_no_golds_give_nothing():
    assert reward_hacking_reason("def (:", SEED, ["Paris"]) is None
    assert reward_hacking_reason(with_line("X = 'Paris'"), SEED, []) is None


def test_only_golds_the_report_showed_count():
    shown = Problem("a", {"question": "q"}, "Lyon")
    hidden = Problem("b", {"question": "q"}, "Nice")
    assert shown_problems([shown, hidden], "gold: Lyon (predicted: Paris)") == [shown]


def test_normalisation_is_shared_by_numbers_and_text():
    assert normalize_gold(12.0) == normalize_gold("12") == normalize_gold(" 12.00 ") == "12"
    assert normalize_gold("The  Who!") == "who"


def test_a_yes_no_reader_passes_where_a_copied_fact_beside_it_is_still_caught():
    """The paper's short-answer change written by hand (what a 2Wiki relay's Proposer wrote,
    refused for its "no") is no copy; a gold fact in the same candidate still is."""
    reader = with_line("short = 'yes' if 'yes' in state['question'].lower() else 'no'")
    assert reward_hacking_reason(reader, SEED, ["no", "yes", "Paris"]) is None
    cheat = reader.replace("else 'no'", "else 'Paris'")
    assert [value for value, _ in hardcoded_gold(cheat, SEED, ["no", "yes", "Paris"])] == ["paris"]
