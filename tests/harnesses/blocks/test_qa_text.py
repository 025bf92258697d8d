"""The QA blocks' deterministic parts: how the answer prompt bounds the passages, and the
short answer's normalisation rules (no model: these are pure text functions)."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.blocks.qa import (
    CHARS_PER_TOKEN,
    Shown,
    bounded,
    normalise_short,
    short_answer,
)


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


class Replies:
    """A scripted Solver for the short answer's control flow (the real-model path is
    tests/harnesses/blocks/test_blocks.py): every call gets `reply`."""

    def __init__(self, reply: str) -> None:
        self.reply, self.prompts = reply, []

    def llm(self, prompt: str, **_: object) -> str:
        self.prompts.append(prompt)
        return self.reply


@pytest.mark.parametrize(("question", "answer", "reply", "kept"), [
    # the 1.5B Solver's reply to 4 of 24 HotpotQA names: not a span, so the answer stands
    ("Who was older, George Atzerodt or Andrew Johnson?", "Andrew Johnson", "Yes",
     "Andrew Johnson"),
    # an either/or question opens like a yes/no one but asks for one of the two (2Wiki)
    ("Was Diego Lugano or John R. Gunn born first?", "John R. Gunn", "Yes", "John R. Gunn"),
    ("Were both bands formed in Leeds?", "Both were formed in Leeds.", "Yes.", "yes"),
    ("Is Paris in Spain?", "Paris is in France, not Spain", "No", "no"),
    ("Where was Tomas Berg born?", "He was born in Oskarby, Sweden.", "Oskarby", "Oskarby"),
    ("Where was Tomas Berg born?", "He was born in Oskarby, Sweden.", "Stockholm",
     "He was born in Oskarby, Sweden"),  # words the answer never said
    ("Which band?", "The Beatles", "the Beatles.", "Beatles"),
    ("When?", "It opened on 12 May 1887.", "Answer: 12 May 1887", "12 May 1887"),
])
def test_the_short_answer_keeps_only_a_span_of_the_answer(question: str, answer: str,
                                                          reply: str, kept: str) -> None:
    tools = Replies(reply)
    assert short_answer(tools, question, answer) == kept
    assert len(tools.prompts) == 1 and f"Answer: {answer}\n" in tools.prompts[0]


def test_an_empty_answer_asks_nothing() -> None:
    tools = Replies("Yes")
    assert short_answer(tools, "Who?", "  ") == "" and tools.prompts == []
