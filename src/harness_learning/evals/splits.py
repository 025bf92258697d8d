"""Per-round draws from a dev pool: feedback problems (shown to the Proposer with their gold)
and selection problems (scored, gold never shown), as in the paper.

- reasoning track: the pool is the task's 25 dev problems and the paper uses all of them for
  both feedback and selection: pass `disjoint=False` (or sizes that cover the pool).
- QA track: each round draws 6 feedback + 64 selection problems, disjoint, from a 500-question
  pool. When the pool is smaller than asked, the draw is clamped (selection keeps what is left
  after feedback) and a warning says so.

Both are the paper's protocol, under which a memorised gold pays: on the reasoning track every
shown problem is also scored, and on the QA track a question shown in one round may be scored in
the next. `held_out_round` is the protocol the adapter uses by default (`AdaptConfig.split`): the
pool is split once per run into a selection part, scored every round and never shown, and a
feedback part that every round's feedback draws from. A candidate that copies what any report of
the run showed then gains nothing in selection, however little of it it copies, which no test on
a few shown problems could promise (`lab/harness_learning_lab/bench/memorisation.py` measures that).

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
    pool = _checked_pool(dev, n_feedback, n_selection)
    rng = _rng(round_index, seed)
    if not disjoint:
        feedback = rng.sample(pool, _clamp(n_feedback, len(pool), "feedback"))
        selection = rng.sample(pool, _clamp(n_selection, len(pool), "selection"))
        return feedback, selection
    order = rng.sample(pool, len(pool))
    n_fb = _clamp(n_feedback, len(pool), "feedback")
    n_sel = _clamp(n_selection, len(pool) - n_fb, "selection")
    return order[:n_fb], order[n_fb : n_fb + n_sel]


def held_out_round(dev: list[P], round_index: int, seed: int, n_feedback: int,
                   n_selection: int, described: P | None = None) -> tuple[list[P], list[P]]:
    """`(feedback, selection)` for one round of the held-out protocol: the selection is the same
    `n_selection` problems every round (drawn once from `seed`), and the feedback is drawn each
    round from the rest of the pool, so no problem a report shows is ever scored for selection.
    `described` is the problem the task's description quotes as its example (shown to the
    Proposer in every prompt, with its gold for a user's own task): it stays on the feedback
    side. A pool too small for both keeps at least one problem on each side, with a warning."""
    pool = _checked_pool(dev, n_feedback, n_selection)
    order = _rng(-1, seed).sample(pool, len(pool))  # one split per run: round-independent
    if described is not None:  # moved last, so the selection (drawn first) never holds it
        order = sorted(order, key=lambda p: p.id == described.id)
    wants_feedback = n_feedback > 0 or described is not None
    reserve = 1 if wants_feedback and len(pool) > 1 else 0  # a feedback side, however small
    n_sel = _clamp(n_selection, len(pool) - reserve, "selection (held out from feedback)")
    selection, rest = order[:n_sel], order[n_sel:]
    n_fb = _clamp(n_feedback, len(rest), "feedback (outside the held-out selection)")
    feedback = _rng(round_index, seed).sample(rest, n_fb)
    return feedback, selection


def _checked_pool(dev: list[P], n_feedback: int, n_selection: int) -> list[P]:
    """The dev pool in id order (a draw depends on ids, not on the order given), after the
    checks both protocols make of their inputs."""
    if n_feedback < 0 or n_selection < 0:
        raise ValueError("n_feedback and n_selection must be >= 0")
    ids = [p.id for p in dev]
    if len(set(ids)) != len(ids):
        raise ValueError("the dev pool has duplicate problem ids")
    return sorted(dev, key=lambda p: p.id)


def _clamp(wanted: int, available: int, what: str) -> int:
    if wanted > available:
        warnings.warn(
            f"{what}: asked for {wanted} problems but only {available} are available in the dev "
            f"pool; using {available}",
            stacklevel=3,
        )
        return available
    return wanted
