"""A second chance for an unusable Proposer answer: one repair turn, or one resample.

Small Proposers often almost succeed: a SEARCH line copied with the wrong indentation, a
function renamed, a missing parenthesis. As aider does, the Proposer is shown what went wrong
with the closest lines of the program and answers again, once. An edit that changes nothing is
no use to repair: a 1.5B Proposer shown its own echo of the function echoes it again (a revise
turn that said so turned 1 of 7 no-ops valid on the committed reports, a fresh sample 6 of 11).
It is sampled afresh instead, with a note that a copy was refused but not the copy itself. An
edit that repeats a version already judged is sampled afresh too.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable

from harness_learning.evals.judge import DUPLICATE, INERT, UNCHANGED, Outcome
from harness_learning.harnesses.edits import EDIT_ERROR_KINDS
from harness_learning.harnesses.llm.completion import Completion

REPAIRABLE = frozenset(EDIT_ERROR_KINDS) - {"truncated"} | {"syntax", "too_long",
                                                             "no_build_graph"}
"""Invalid kinds a repair turn can fix (a truncated answer needs a shorter one, not a fix)."""
RESAMPLED = frozenset({UNCHANGED, INERT, DUPLICATE})
"""Invalid kinds answered by a fresh sample: a no-op (to the letter, or in what runs), and a
repeat of a version the run already judged (`graphs.adapter.run_memory.refuse_repeats`)."""
NO_OP_NOTE = (
    "\n\n(An earlier answer to this request left what the program does as it was and was "
    "refused. Change what the program does: how the Solver is asked, how its reply is read "
    "and checked, or which tool or building block it uses.)")
"""Appended to the request when a no-op is resampled: the Proposer learns a copy is refused
without being shown one to copy."""
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


def with_no_op_note(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The request with `NO_OP_NOTE` at the end of its last message (once, however many
    no-ops came back)."""
    last = messages[-1]
    if last["content"].endswith(NO_OP_NOTE):
        return messages
    return [*messages[:-1], {**last, "content": last["content"] + NO_OP_NOTE}]


Sample = Callable[[list[dict[str, str]], int], Awaitable[Completion]]
Judged = Callable[[Completion, str], Awaitable[Outcome]]


async def second_chances(messages: list[dict[str, str]], seed: int, parent_source: str,
                         sample: Sample, judged: Judged, *, turns: int
                         ) -> tuple[list[dict[str, str]], Completion, Outcome]:
    """A sample, then up to `turns` second chances: a fresh sample when it changes nothing that
    runs (kinds `unchanged` and `inert`, with `NO_OP_NOTE`) or repeats a version already
    judged (kind `duplicate`: the prompt's run memory already says a repeat is refused), one
    repair turn when it cannot be used.
    Returns the prompt the last completion answered, it, and its outcome. `judged` checks
    (and may log) each attempt by name: sample, resample, repair."""
    completion = await sample(messages, seed)
    outcome = await judged(completion, "sample")
    for turn in range(turns):
        if outcome.invalid_kind in RESAMPLED:
            if outcome.invalid_kind in (UNCHANGED, INERT):
                messages = with_no_op_note(messages)
            completion = await sample(messages, seed + RESAMPLE_SEED * (turn + 1))
            outcome = await judged(completion, "resample")
        elif outcome.invalid_kind in REPAIRABLE:
            messages = [*messages, {"role": "assistant", "content": completion.text},
                        {"role": "user", "content": repair_message(outcome, parent_source)}]
            completion = await sample(messages, seed)
            outcome = await judged(completion, "repair")
        else:
            break
    return messages, completion, outcome
