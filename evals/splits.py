"""Per-round draws from a dev pool: feedback problems (shown to the Proposer with their gold)
and selection problems (scored, gold never shown), as in the paper.

- reasoning track: the pool is the task's 25 dev problems and the paper uses all of them for
  both feedback and selection: pass `disjoint=False` (or sizes that cover the pool).
- QA track: each round draws 6 feedback + 64 selection problems, disjoint, from a 500-question
  pool. When the pool is smaller than asked, the draw is clamped (selection keeps what is left
  after feedback) and a warning says so.

A draw depends only on (pool ids, round index, seed): rerunning a round reproduces it, and a
resumed run sees the same problems.
"""

from __future__ import annotations

import hashlib
import random
import warnings
from typing import TypeVar

from harness_learning.evals.problem import Problem

P = TypeVar("P", bound=Problem)

QA_FEEDBACK, QA_SELECTION = 6, 64
REASONING_FEEDBACK, REASONING_SELECTION = 25, 25


def _rng(round_index: int, seed: int) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{round_index}".encode())
    return random.Random(digest.hexdigest())


def sample_round(
    dev: list[P],
    round_index: int,
    seed: int,
    n_feedback: int = QA_FEEDBACK,
    n_selection: int = QA_SELECTION,
    *,
    disjoint: bool = True,
) -> tuple[list[P], list[P]]:
    """`(feedback, selection)` for one round, reproducible from `(round_index, seed)`.

    With `disjoint=False` both are drawn from the whole pool independently (a full pool when a
    size equals it, in a round-dependent order).
    """
    if n_feedback < 0 or n_selection < 0:
        raise ValueError("n_feedback and n_selection must be >= 0")
    ids = [p.id for p in dev]
    if len(set(ids)) != len(ids):
        raise ValueError("the dev pool has duplicate problem ids")
    pool = sorted(dev, key=lambda p: p.id)
    rng = _rng(round_index, seed)
    if not disjoint:
        feedback = rng.sample(pool, _clamp(n_feedback, len(pool), "feedback"))
        selection = rng.sample(pool, _clamp(n_selection, len(pool), "selection"))
        return feedback, selection
    order = rng.sample(pool, len(pool))
    n_fb = _clamp(n_feedback, len(pool), "feedback")
    n_sel = _clamp(n_selection, len(pool) - n_fb, "selection")
    return order[:n_fb], order[n_fb : n_fb + n_sel]


def _clamp(wanted: int, available: int, what: str) -> int:
    if wanted > available:
        warnings.warn(
            f"{what}: asked for {wanted} problems but only {available} are available in the dev "
            f"pool; using {available}",
            stacklevel=3,
        )
        return available
    return wanted
