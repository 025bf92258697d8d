"""Proposer rewards (docs/ARCHITECTURE.md, "Rewards") and GRPO group advantages.

reward = task score on the selection problems (0..1) + a validity bonus; never negative.
- reasoning: +0.05 the edit parses, +0.10 it applies, + up to 0.15 x the fraction of evaluation
  runs that complete (max bonus 0.30). The score counts only when the edit applied (there is no
  candidate to score otherwise).
- QA: +0.10 only if the program parses, defines `build_graph`, is within the line limit and
  completes the evaluation; otherwise the whole reward is 0.

Each reward is a plain callable `(RewardInputs) -> (reward, parts)`; `parts` is JSON-ready and is
what the execution log stores next to the reward.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness_learning.harnesses.compiler import parse_source

PARSE_BONUS = 0.05
APPLY_BONUS = 0.10
COMPLETION_BONUS = 0.15
QA_VALID_BONUS = 0.10
DEFAULT_LINE_LIMIT = 200  # the harness contract's LINE_LIMIT; passed explicitly when configured


@dataclass(frozen=True)
class RewardInputs:
    """What is known about one candidate once it has been judged."""

    selection_score: float = 0.0
    """Mean task score of the candidate on the selection problems, 0..1."""
    parsed: bool = False
    applied: bool = False
    completed_fraction: float = 0.0
    """Fraction of the candidate's evaluation runs that completed, 0..1."""
    syntax_ok: bool = False
    """The new source parses as Python."""
    defines_build_graph: bool = False
    line_count: int = 0
    line_limit: int = DEFAULT_LINE_LIMIT
    min_completed_fraction: float = 1.0
    """QA: the share of runs that must complete for the evaluation to count as completed."""


def _unit(name: str, value: float) -> float:
    if not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def reasoning_reward(x: RewardInputs) -> tuple[float, dict[str, Any]]:
    score = _unit("selection_score", x.selection_score)
    done = _unit("completed_fraction", x.completed_fraction)
    if x.applied and not x.parsed:
        raise ValueError("an edit cannot apply without parsing (applied=True, parsed=False)")
    parse = PARSE_BONUS if x.parsed else 0.0
    apply = APPLY_BONUS if x.applied else 0.0
    complete = COMPLETION_BONUS * done if x.applied else 0.0
    task = score if x.applied else 0.0
    reward = task + parse + apply + complete
    parts = {"task_score": task, "parse_bonus": parse, "apply_bonus": apply,
             "completion_bonus": complete, "reward": reward}
    return reward, parts


def qa_reward(x: RewardInputs) -> tuple[float, dict[str, Any]]:
    score = _unit("selection_score", x.selection_score)
    done = _unit("completed_fraction", x.completed_fraction)
    checks = {
        "parses": bool(x.parsed and x.applied and x.syntax_ok),
        "defines_build_graph": bool(x.defines_build_graph),
        "within_line_limit": 0 < x.line_count <= x.line_limit,
        "completes": done >= x.min_completed_fraction and done > 0.0,
    }
    valid = all(checks.values())
    task = score if valid else 0.0
    bonus = QA_VALID_BONUS if valid else 0.0
    reward = task + bonus
    return reward, {**checks, "valid": valid, "task_score": task, "validity_bonus": bonus,
                    "reward": reward}


REWARDS: dict[str, Callable[[RewardInputs], tuple[float, dict[str, Any]]]] = {
    "reasoning": reasoning_reward,
    "qa": qa_reward,
}


def reward_for(track: str) -> Callable[[RewardInputs], tuple[float, dict[str, Any]]]:
    """The reward of a task track ('reasoning' or 'qa')."""
    try:
        return REWARDS[track]
    except KeyError:
        raise ValueError(f"no reward for track {track!r}; known: {', '.join(REWARDS)}") from None


def group_advantages(
    rewards: Sequence[float], scale_by_std: bool = False, eps: float = 1e-4
) -> list[float]:
    """GRPO advantages within one group: reward minus the group mean, optionally divided by the
    group's standard deviation plus `eps`. The std is the sample std (n - 1), as TRL computes it;
    a group of one has advantage 0."""
    values = [float(r) for r in rewards]
    if any(math.isnan(v) for v in values):
        raise ValueError("rewards contain NaN")
    n = len(values)
    if n == 0:
        return []
    mean = sum(values) / n
    centred = [v - mean for v in values]
    if not scale_by_std:
        return centred
    std = math.sqrt(sum(c * c for c in centred) / (n - 1)) if n > 1 else 0.0
    return [c / (std + eps) for c in centred]


def program_facts(source: str | None) -> tuple[bool, bool, int]:
    """(parses as Python, defines a top-level build_graph, line count) of a candidate source."""
    if not source:
        return False, False, 0
    lines = len(source.splitlines())
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, False, lines
    defines = any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "build_graph"
        for node in tree.body
    )
    return True, defines, lines


def proposal_reward(
    *, track: str, parsed: bool, applied: bool, valid: bool, completed_fraction: float,
    score: float, source: str | None, line_limit: int = DEFAULT_LINE_LIMIT,
) -> tuple[float, dict[str, Any]]:
    """The reward of one judged proposal, from what the adapter knows about it. `valid` is the
    runtime's verdict (compiles to a graph, within the limit); QA needs it on top of the paper's
    checks, which are recomputed from `source` so the parts show which one failed."""
    syntax_ok, defines, lines = program_facts(source if applied else None)
    inputs = RewardInputs(
        selection_score=score, parsed=parsed, applied=applied,
        completed_fraction=completed_fraction, syntax_ok=syntax_ok and valid,
        defines_build_graph=defines, line_count=lines, line_limit=line_limit,
    )
    return reward_for(track)(inputs)
