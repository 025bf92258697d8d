"""The one answer clean-up every task applies: the harness returns `answer`; a leading
"Answer:" label and surrounding whitespace are dropped, and nothing else (extraction is the
harness's job, and what it improves)."""

from __future__ import annotations

_LABEL = "answer:"


def strip_answer(answer: str) -> str:
    text = answer.strip()
    if text[: len(_LABEL)].lower() == _LABEL:
        text = text[len(_LABEL) :].strip()
    return text
