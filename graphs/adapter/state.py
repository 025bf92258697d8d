"""The adapter's LangGraph state: what Studio shows, so it carries readable round summaries.

Declared with `typing_extensions.TypedDict`: with `typing`'s, LangGraph's schema generation
breaks on Python 3.11.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict


class CandidateView(TypedDict, total=False):
    round: int
    index: int
    proposal_id: str
    sha: str | None
    parsed: bool
    applied: bool
    valid: bool
    invalid_reason: str | None
    selection_score: float | None
    completed_fraction: float | None
    reward: float
    diff: str
    pending: bool
    """Racing only: valid and stored, waiting for the race node to evaluate it."""
    outcome: dict[str, Any]
    """Racing drafts only: the judge's `Outcome` so far (`evals.judge.Outcome.to_dict`)."""
    raced_out: bool
    """Racing only: dropped before the last stage (its score covers `evaluated` problems)."""
    evaluated: int


class RoundView(TypedDict, total=False):
    round: int
    current_sha: str
    feedback_score: float
    current_selection_score: float | None
    candidates: list[CandidateView]
    decision: str
    chosen_sha: str
    adopted: bool
    approved: bool | None


class AdapterState(TypedDict, total=False):
    task: str
    round: int
    current_sha: str
    best_score: float | None
    feedback_ids: list[str]
    selection_ids: list[str]
    feedback_score: float
    current_selection_score: float | None
    report: str
    candidates: Annotated[list[CandidateView], operator.add]
    drafts: Annotated[list[CandidateView], operator.add]
    """Racing only: the valid candidates the race node evaluates together."""
    rounds: Annotated[list[RoundView], operator.add]
    rounds_without_gain: int
    spent: dict[str, Any]
    human_feedback: list[str]
    stop_reason: str
