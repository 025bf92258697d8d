"""Judging a candidate: one Proposer completion in, one `Outcome` out (docs/ARCHITECTURE.md,
"The judge's outcome").

The adapter's candidate node, its racing node and online GRPO's reward all judge through this
module, so a completion gets the same verdict and the same reward wherever it is judged. The
outcome is one frozen record that carries the candidate from the completion to its reward; nothing
downstream parses the completion again.

Judging has two halves because racing evaluates the round's candidates together, later:
`check_candidate` parses, applies, compares with the parent, checks the source and runs the
literal reward-hacking guard (no evaluation); `settle_candidate` takes the evaluation of a
candidate that passed, settles validity and scores, puts a valid one to the behavioural
hard-coding check (`evals.memorisation`) and rewards it. `judge_candidate` does both around an
`evaluate` callable. `Outcome` itself is one of the log's records (`harnesses.store.records`): a
proposal row holds it as the judge made it. Both guards read the same `Exposure` (what the
report showed), so no caller can judge without them: there is no other way to settle an
evaluated candidate.

Why a candidate is invalid is `Outcome.invalid_kind`, one of `INVALID_KINDS` (the edit's failure
kinds, the runtime's check kinds and the judge's own), and `invalid_reason` is
`"<kind>: <detail>"` for people. A new check adds its kind to `JUDGE_KINDS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from harness_learning.evals.guards import REASON_PREFIX, reward_hacking_reason
from harness_learning.evals.memorisation import Exposure, Probe, memorisation_check
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import EvalResult
from harness_learning.evals.rewards import proposal_reward
from harness_learning.harnesses.compiler import INVALID_KINDS as CHECK_KINDS
from harness_learning.harnesses.compiler import HarnessInvalid, check_source
from harness_learning.harnesses.edits import EDIT_ERROR_KINDS, parse_and_apply
from harness_learning.harnesses.edits.normalise import inert_change
from harness_learning.harnesses.results import ErrorKind
from harness_learning.harnesses.store.records import Outcome

UNCHANGED = "unchanged"
"""The edit applied but the new source is the parent's: nothing new to evaluate, reward 0."""
REWARD_HACKING = REASON_PREFIX
"""The candidate hard-codes gold answers the report showed: its literals hold them (scored 0
without running) or its behaviour gives it away (`evals.memorisation`); reward 0."""
INCOMPLETE = "incomplete"
"""The evaluation ran but not one problem produced an answer."""
EVAL_TIMEOUT = "timeout"
"""The evaluate callable gave up (online GRPO's overall evaluation deadline)."""
UNSCORED_SHARE = "unscored_share"
"""More than `MAX_UNSCORED_SHARE` of the problems went unscored (infrastructure or budget): the
score stands on too few problems to compare, whoever caused the failures."""
MAX_UNSCORED_SHARE = 0.25
"""The largest share of a candidate's problems that may go unscored while its score still
counts. A candidate that answers the problems it can and makes the rest fail as
infrastructure would otherwise be scored on the first kind alone (1.000 on 4 of 12)."""
DUPLICATE = "duplicate"
"""The new source is, up to comments and layout, a version the run already judged
(`harnesses.edits.normalise`): refused before any evaluation, nothing new to learn, reward 0."""
INERT = "inert"
"""The edit changes nothing that runs: only docstrings, or top-level functions nothing calls
(`harnesses.edits.normalise.inert_change`). Refused before any evaluation, like `unchanged`:
evaluated, it would tie its parent and, adopted at the tie, leave dead code behind; reward 0."""
JUDGE_KINDS: tuple[str, ...] = (UNCHANGED, REWARD_HACKING, INCOMPLETE, EVAL_TIMEOUT,
                                UNSCORED_SHARE, DUPLICATE, INERT)
INVALID_KINDS: tuple[str, ...] = (*EDIT_ERROR_KINDS, *CHECK_KINDS, *JUDGE_KINDS)
"""Every value `Outcome.invalid_kind` takes: what logs record and tables count."""
ZEROED = frozenset({UNCHANGED, REWARD_HACKING, DUPLICATE, INERT})
"""Invalid kinds whose reward is 0 whatever the bonuses would say."""
REASON_CHARS = 500

NOTHING_SHOWN = Exposure()
Evaluate = Callable[[str, list[Problem]], Awaitable[EvalResult]]
"""Evaluates a candidate source on the given problems (in the sandbox)."""


def invalid(kind: str, detail: str) -> dict[str, str]:
    """The two fields of an invalid verdict; the kind must be one of `INVALID_KINDS`."""
    if kind not in INVALID_KINDS:
        raise ValueError(f"unknown invalid kind {kind!r}; known: {INVALID_KINDS}")
    return {"invalid_kind": kind, "invalid_reason": f"{kind}: {detail}"[:REASON_CHARS]}


def check_candidate(parent_source: str, completion: str, edit_format: str,
                    finish_reason: str | None, *, track: str, line_limit: int,
                    exposure: Exposure = NOTHING_SHOWN) -> Outcome:
    """Everything about a completion that needs no run. An invalid outcome is final (its reward
    is set); a valid one `needs_evaluation`."""
    edit = parse_and_apply(parent_source, completion, edit_format, finish_reason)
    base = Outcome(parsed=edit.parsed, applied=edit.applied, unchanged=edit.unchanged,
                   new_source=edit.new_source, diff=edit.diff,
                   edit=edit.edit.to_dict() if edit.edit is not None else None)
    verdict: dict[str, Any] = {}
    if edit.failure is not None:
        verdict = invalid(edit.failure.kind, edit.failure.detail)
    elif edit.unchanged:
        verdict = invalid(UNCHANGED, "the edit leaves the parent's source as it was")
    else:
        try:
            check_source(edit.new_source, line_limit)
        except HarnessInvalid as err:
            verdict = invalid(err.kind, err.detail)
    if not verdict and (why := inert_change(parent_source, edit.new_source)):
        verdict = invalid(INERT, why)
    if not verdict:
        hacked = reward_hacking_reason(edit.new_source, parent_source, exposure.golds,
                                       exposure.demonstrable)
        if hacked:
            detail = hacked.removeprefix(f"{REWARD_HACKING}: ")
            verdict = {**invalid(REWARD_HACKING, detail), "selection_score": 0.0}
    if not verdict:
        return base
    return _rewarded(dataclasses.replace(base, **verdict), track, line_limit)


async def settle_candidate(outcome: Outcome, evaluation: EvalResult, *, exposure: Exposure,
                           probe: Probe, track: str, line_limit: int) -> Outcome:
    """Settle a checked candidate with its `evaluation` on the selection problems. A valid one
    is put to the memorisation check against `exposure`, evaluating what it needs through
    `probe`; flagged, it is invalid (kind reward_hacking), never adopted, reward 0."""
    if not outcome.needs_evaluation:
        raise ValueError("settle_candidate takes an outcome that needs evaluation")
    verdict = incomplete_verdict(evaluation)
    valid = not verdict
    settled = dataclasses.replace(
        outcome, **verdict, valid=valid, evaluated=True,
        completed_fraction=evaluation.completed_fraction,
        selection_score=evaluation.mean_score if valid else None)
    if valid:
        memorised = await memorisation_check(evaluation, exposure, probe)
        if memorised:
            detail = memorised.removeprefix(f"{REWARD_HACKING}: ")
            settled = dataclasses.replace(settled, **invalid(REWARD_HACKING, detail), valid=False,
                                          selection_score=0.0)
    return _rewarded(settled, track, line_limit)


def repeated(outcome: Outcome, detail: str, *, track: str, line_limit: int) -> Outcome:
    """Refuse a checked candidate that repeats a judged version (kind `duplicate`): it is
    never evaluated."""
    if not outcome.needs_evaluation:
        return outcome
    return _rewarded(dataclasses.replace(outcome, **invalid(DUPLICATE, detail)), track,
                     line_limit)


def timed_out(outcome: Outcome, detail: str, *, track: str, line_limit: int) -> Outcome:
    """Settle a checked candidate whose evaluation did not finish in time."""
    return _rewarded(dataclasses.replace(outcome, **invalid(EVAL_TIMEOUT, detail)),
                     track, line_limit)


async def judge_candidate(parent_source: str, completion: str, edit_format: str,
                          finish_reason: str | None, *, track: str, line_limit: int,
                          selection: Sequence[Problem], evaluate: Evaluate,
                          exposure: Exposure = NOTHING_SHOWN) -> Outcome:
    """Check, evaluate on `selection` (only a candidate that passed), settle and reward one
    completion. A `TimeoutError` from `evaluate`, on the selection or in the memorisation
    check, makes the candidate invalid (kind `timeout`)."""
    outcome = check_candidate(parent_source, completion, edit_format, finish_reason,
                              track=track, line_limit=line_limit, exposure=exposure)
    if not outcome.needs_evaluation:
        return outcome
    source = outcome.new_source or ""

    async def probe(problems: list[Problem]) -> EvalResult:
        return await evaluate(source, problems)

    try:
        evaluation = await evaluate(source, list(selection))
        return await settle_candidate(outcome, evaluation, exposure=exposure, probe=probe,
                                      track=track, line_limit=line_limit)
    except TimeoutError as exc:
        return timed_out(outcome, str(exc) or "the evaluation did not finish", track=track,
                         line_limit=line_limit)


def incomplete_verdict(result: EvalResult) -> dict[str, str]:
    """Why an evaluation does not count as completed (docs/ARCHITECTURE.md, "A harness": a valid
    harness "completes an evaluation"): it never compiled, not one problem ran to an answer, or
    more than `MAX_UNSCORED_SHARE` of its problems went unscored. {} when it counts."""
    bad = next((r for r in result.results if r.error_kind == ErrorKind.INVALID), None)
    if bad is not None:
        if bad.refused_by in CHECK_KINDS:  # the error already reads "kind: detail"
            return {"invalid_kind": bad.refused_by,
                    "invalid_reason": (bad.error or bad.refused_by)[:REASON_CHARS]}
        return invalid(INCOMPLETE, bad.error or "the source did not compile")
    if result.results and result.completed_fraction == 0.0:
        first = next((r for r in result.results if r.error), None)
        detail = f"{first.error_kind}: {first.error}" if first else "no answer produced"
        return invalid(INCOMPLETE, f"did not complete the evaluation: {detail}")
    unscored = [r for r in result.results if r.unscored]
    if result.results and len(unscored) > MAX_UNSCORED_SHARE * len(result.results):
        first = unscored[0]
        return invalid(UNSCORED_SHARE, f"{len(unscored)} of {len(result.results)} problems "
                       f"unscored, over {MAX_UNSCORED_SHARE:.0%} (first: {first.error_kind}: "
                       f"{first.error})")
    return {}


def _rewarded(outcome: Outcome, track: str, line_limit: int) -> Outcome:
    """The outcome with its reward and parts (docs/ARCHITECTURE.md, "Rewards"); zeroed kinds score 0."""
    reward, parts = proposal_reward(
        track=track, parsed=outcome.parsed, applied=outcome.applied, valid=outcome.valid,
        completed_fraction=outcome.completed_fraction or 0.0,
        score=outcome.selection_score or 0.0, source=outcome.new_source, line_limit=line_limit)
    if outcome.invalid_kind in ZEROED:
        reward, parts = 0.0, {**parts, outcome.invalid_kind: True, "reward": 0.0}
    return dataclasses.replace(outcome, reward=reward, reward_parts=parts)
