"""The adapter's LangGraph state: what Studio shows, so it carries readable round summaries.

Declared with `typing_extensions.TypedDict`: with `typing`'s, LangGraph's schema generation
breaks on Python 3.11.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict


class CandidateView(TypedDict, total=False):
    round: int
    index: int
    proposal_id: str
    sha: str | None
    origin: str
    """Where the candidate came from: proposer, operator:NAME or merge."""
    parsed: bool
    applied: bool
    valid: bool
    invalid_kind: str | None
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


class AdapterInput(TypedDict, total=False):
    """What a person gives a run (its settings are the graph's context, `AdapterSettings`)."""

    human_feedback: Annotated[list[str], Field(description=(
        "Notes for the Proposer from a person, shown in every round's report (optional)."))]


class AdapterOutput(TypedDict, total=False):
    """What a run returns: where it is kept, what it adopted, each round, why it stopped."""

    run_dir: str
    current_sha: str
    best_score: float | None
    rounds: list[RoundView]
    spent: dict[str, Any]
    stop_reason: str


class AdapterState(TypedDict, total=False):
    task: str
    run_dir: str
    """The run directory: it holds the run's settings (config.json), so a thread's later runs
    and state reads need none (`graphs.adapter.server_threads`)."""
    round: int
    current_sha: str
    best_score: float | None
    feedback_ids: list[str]
    selection_ids: list[str]
    feedback_score: float
    current_selection_score: float | None
    report: str
    operator_plan: list[str]
    """The operators and experience-library changes this round tries on the current version
    (`experience_search.operator_plan`)."""
    slots: list[dict[str, Any]]
    """The round's candidate slots, planned once from the plan (`slots.Slot.to_dict`): the
    Proposer's samples, the merge's, the operators' and the experience library's."""
    candidates: Annotated[list[CandidateView], operator.add]
    drafts: Annotated[list[CandidateView], operator.add]
    """Racing only: the valid candidates the race node evaluates together."""
    rounds: Annotated[list[RoundView], operator.add]
    rounds_without_gain: int
    spent: dict[str, Any]
    human_feedback: list[str]
    stop_reason: str
