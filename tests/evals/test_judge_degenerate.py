"""The judge takes any answer a Proposer can give: seeded random degenerate answers (brackets,
unary chains, lone surrogates, NUL bytes, stray decorators and fences) in every edit format get
an `Outcome`, never an exception, and whatever source they make can be summarised and
normalised by the run memory. A case that raised once is kept below by name."""

from __future__ import annotations

import random

import pytest

from harness_learning.evals.judge import INVALID_KINDS, check_candidate
from harness_learning.graphs.adapter.run_memory import describe_change
from harness_learning.harnesses.edits.normalise import inert_change, normalised_sha
from harness_learning.harnesses.seeds import seed_source

SEED = seed_source("reasoning_direct")
LINE = next(line for line in SEED.splitlines() if line.startswith('PROMPT = """Solve'))
PIECES = ["(", ")", "[", "]", "{", "}", "lambda: ", "not ", "-", "~", "await ", "x if y else ",
          "f'{", "}'", "\\", "\n", "    ", "\t", "\x00", "\ud800", "\udfff", "\u202e", "def f():\n",
          "class C:\n", "@d\n", "'''", '"""', "#", "1", "+1", "*", ",", ":", "=", "yield ",
          "async ", "match x:\n case 1:\n", "global solve\n", "import sys\n", "```", "=======\n"]
CASES = 400


def answer(rng: random.Random) -> tuple[str, str]:
    """One degenerate answer and its edit format."""
    if rng.random() < 0.3:
        junk = "X = " + rng.choice(["-", "not ", "~", "lambda: ", "[", "("]) * rng.choice(
            [50, 150, 400, 2000]) + "1"
    else:
        junk = "".join(rng.choice(PIECES) for _ in range(rng.choice([5, 50, 500])))
    fmt = rng.choice(["whole_program", "search_replace", "function"])
    if fmt == "whole_program":
        return f"```python\n{SEED}\n{junk}\n```\n", fmt
    if fmt == "search_replace":
        return f"<<<<<<< SEARCH\n{LINE}\n=======\n{junk}\n{LINE}\n>>>>>>> REPLACE\n", fmt
    return f"```python\ndef solve(state):\n    {junk}\n```\n", fmt


@pytest.mark.parametrize("start", range(0, CASES, 100))
def test_every_degenerate_answer_gets_an_outcome(start):
    rng = random.Random(start)
    for _ in range(100):
        completion, fmt = answer(rng)
        outcome = check_candidate(SEED, completion, fmt, "stop", track="reasoning",
                                  line_limit=400)
        assert outcome.invalid_kind is None or outcome.invalid_kind in INVALID_KINDS
        if outcome.new_source is not None:
            describe_change(SEED, outcome.new_source)
            inert_change(SEED, outcome.new_source)
            assert len(normalised_sha(outcome.new_source)) == 64


def test_the_cases_that_once_raised():
    surrogate = "```python\ndef solve(state):\n    return {'a': '\ud800'}\n```\n"
    looping = f"<<<<<<< SEARCH\n{LINE}\n=======\nX = 1{'+1' * 1000}\n{LINE}\n>>>>>>> REPLACE\n"
    kinds = [check_candidate(SEED, completion, fmt, "stop", track="reasoning",
                             line_limit=400).invalid_kind
             for completion, fmt in [(surrogate, "function"), (looping, "search_replace")]]
    assert kinds == ["malformed_block", "syntax"]
