"""The QA blocks' deterministic parts: how the answer prompt bounds the passages, and the
short answer's normalisation rules (no model: these are pure text functions)."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.blocks.qa import CHARS_PER_TOKEN, Shown, bounded, normalise_short


def test_each_passage_gets_an_equal_share_of_the_token_budget_and_appears_once() -> None:
    long = " ".join(f"word{i}" for i in range(400))  # about 2,800 characters
    passages = [Shown(f"T{i}", long) for i in range(4)] + [Shown("T0", long)]  # one repeat
    shown = bounded(passages, tokens=100)
    blocks = shown.split("\n\n")
    assert [b.split("]", 1)[0] for b in blocks] == ["[T0", "[T1", "[T2", "[T3"]
    for b in blocks:
        text = b.split("] ", 1)[1]
        assert text.endswith(" ...")  # cut, and said to be
        assert len(text) <= 100 // 4 * CHARS_PER_TOKEN + len(" ...")
        assert long.startswith(text.removesuffix(" ..."))  # cut at a word boundary
        assert text.removesuffix(" ...").split()[-1] in long.split()


def test_short_passages_are_shown_whole_and_none_is_said() -> None:
    assert bounded([Shown("A", "Alpha is a town.")]) == "[A] Alpha is a town."
    assert bounded([]) == "(no passages)"


@pytest.mark.parametrize(("reply", "short"), [
    ("The Beatles.", "Beatles"),
    ("Yes, he was born there.", "yes"),
    ("NO.", "no"),
    ("Answer: 12 May 1887!", "12 May 1887"),
    ('Short answer: "Oskarby"', "Oskarby"),
    ("**an apple**\nbecause the passage says so", "apple"),
    ("No one knows", "No one knows"),  # a span that opens with 'no' is not a 'no'
    ("Norway", "Norway"),
    ("", ""),
])
def test_the_short_answer_is_normalised_by_rule(reply: str, short: str) -> None:
    assert normalise_short(reply) == short
