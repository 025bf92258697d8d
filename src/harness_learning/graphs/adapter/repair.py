"""A second chance for an unusable Proposer answer: a repair turn, a revise turn, a resample.

Small Proposers often almost succeed: a SEARCH line copied with the wrong indentation, a
function renamed, a missing parenthesis. As aider does, the Proposer is shown what went wrong
with the closest lines of the program and answers again, once. An edit that changes nothing is
told so in a revise turn (a 1.5B Proposer often echoes the function it was given, and a blind
resample echoes it again about half the time). An edit that repeats a version already judged is
sampled afresh: it was a usable edit, only not a new one.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable

from harness_learning.evals.judge import UNCHANGED, Outcome
from harness_learning.harnesses.edits import EDIT_ERROR_KINDS
from harness_learning.harnesses.llm.completion import Completion

REPAIRABLE = frozenset(EDIT_ERROR_KINDS) - {"truncated"} | {"syntax", "too_long",
                                                             "no_build_graph"}
"""Invalid kinds a repair turn can fix (a truncated answer needs a shorter one, not a fix)."""
REVISED = frozenset({UNCHANGED})
"""Invalid kinds answered by a revise turn: the answer changed nothing, and is told so."""
REVISE_MESSAGE = (
    "Your answer leaves the program exactly as it was, so it cannot get more problems right. "
    "Change what the program does: how the Solver is asked, how its reply is read and checked, "
    "or which tool or building block it uses. Answer again, following the rules of the format "
    "exactly.")
WINDOW_CONTEXT = 1
RESAMPLE_SEED = 7_919


def repair_message(outcome: Outcome, parent_source: str) -> str:
    """What the Proposer is told about its unusable answer: the reason, and where an edit
    missed the program, the program's closest lines."""
    parts = [f"Your answer could not be used: {outcome.invalid_reason}."]
    missed = _missed_search(outcome, parent_source)
    if missed is not None:
        parts.append("The program's closest lines to your SEARCH text are:\n"
                     f"```python\n{closest_lines(parent_source, missed)}\n```\n"
                     "Copy SEARCH lines exactly as they stand there.")
    parts.append("Answer again, following the rules of the format exactly.")
    return "\n\n".join(parts)


def _missed_search(outcome: Outcome, source: str) -> str | None:
    """The SEARCH text of the first block that is not in `source`, if the edit had blocks."""
    for block in (outcome.edit or {}).get("blocks") or []:
        if block["search"].strip() and block["search"].strip("\n") not in source:
            return block["search"]
    return None


def closest_lines(source: str, search: str) -> str:
    """The run of source lines most like `search` (as many lines, plus a line of context
    either side), exactly as they stand (numbering them invites copying the numbers)."""
    lines, want = source.split("\n"), search.strip("\n").split("\n")
    size = max(1, min(len(want), len(lines)))
    target = "\n".join(x.strip() for x in want)

    def likeness(i: int) -> float:
        window = "\n".join(x.strip() for x in lines[i:i + size])
        return difflib.SequenceMatcher(None, window, target, autojunk=False).ratio()

    best = max(range(len(lines) - size + 1), key=likeness)
    lo, hi = max(0, best - WINDOW_CONTEXT), min(len(lines), best + size + WINDOW_CONTEXT)
    return "\n".join(lines[lo:hi])


Sample = Callable[[list[dict[str, str]], int], Awaitable[Completion]]
Judged = Callable[[Completion, str], Awaitable[Outcome]]


async def second_chances(messages: list[dict[str, str]], seed: int, parent_source: str,
                         sample: Sample, judged: Judged,
                         known: Callable[[Outcome], Awaitable[bool]], *, turns: int
                         ) -> tuple[list[dict[str, str]], Completion, Outcome]:
    """A sample, then up to `turns` second chances: a fresh sample when it repeats a version
    already judged (`known`), a revise turn when it changes nothing, a repair turn when it
    cannot be used. Returns the prompt the last completion answered, it, and its outcome.
    `judged` checks (and may log) each attempt by name: sample, resample, revise, repair."""
    completion = await sample(messages, seed)
    outcome = await judged(completion, "sample")
    for turn in range(turns):
        if await known(outcome):
            completion = await sample(messages, seed + RESAMPLE_SEED * (turn + 1))
            outcome = await judged(completion, "resample")
            continue
        if outcome.invalid_kind in REVISED:
            attempt, told = "revise", REVISE_MESSAGE
        elif outcome.invalid_kind in REPAIRABLE:
            attempt, told = "repair", repair_message(outcome, parent_source)
        else:
            break
        messages = [*messages, {"role": "assistant", "content": completion.text},
                    {"role": "user", "content": told}]
        completion = await sample(messages, seed)
        outcome = await judged(completion, attempt)
    return messages, completion, outcome
