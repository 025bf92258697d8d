"""Per-round feedback/selection draws: disjoint, reproducible, clamped with a warning."""

from __future__ import annotations

import pytest

from harness_learning.evals.problem import Problem
from harness_learning.evals.splits import held_out_round, sample_round


def _pool(n: int) -> list[Problem]:
    return [Problem(id=f"q{i:03d}", inputs={"question": f"question {i}"}, gold=str(i))
            for i in range(n)]


def test_qa_round_is_disjoint_and_sized():
    feedback, selection = sample_round(_pool(500), 0, seed=1)
    assert (len(feedback), len(selection)) == (6, 64)
    assert {p.id for p in feedback}.isdisjoint(p.id for p in selection)


def test_reproducible_and_independent_of_pool_order():
    pool = _pool(100)
    a = sample_round(pool, 3, seed=9, n_feedback=6, n_selection=20)
    b = sample_round(list(reversed(pool)), 3, seed=9, n_feedback=6, n_selection=20)
    assert [[p.id for p in part] for part in a] == [[p.id for p in part] for part in b]


def test_rounds_and_seeds_change_the_draw():
    pool = _pool(100)
    r0 = sample_round(pool, 0, seed=1, n_feedback=6, n_selection=20)[1]
    r1 = sample_round(pool, 1, seed=1, n_feedback=6, n_selection=20)[1]
    s2 = sample_round(pool, 0, seed=2, n_feedback=6, n_selection=20)[1]
    assert [p.id for p in r0] != [p.id for p in r1]
    assert [p.id for p in r0] != [p.id for p in s2]


def test_small_pool_is_clamped_with_a_warning():
    with pytest.warns(UserWarning, match="selection: asked for 64 problems but only 54"):
        feedback, selection = sample_round(_pool(60), 0, seed=0)
    assert (len(feedback), len(selection)) == (6, 54)
    assert {p.id for p in feedback}.isdisjoint(p.id for p in selection)


def test_reasoning_track_shares_the_pool():
    pool = _pool(25)
    feedback, selection = sample_round(pool, 2, seed=0, n_feedback=25, n_selection=25,
                                       disjoint=False)
    assert {p.id for p in feedback} == {p.id for p in selection} == {p.id for p in pool}


def test_bad_input():
    with pytest.raises(ValueError, match="duplicate problem ids"):
        sample_round(_pool(3) + _pool(1), 0, seed=0, n_feedback=1, n_selection=1)
    with pytest.raises(ValueError, match=">= 0"):
        sample_round(_pool(3), 0, seed=0, n_feedback=-1, n_selection=1)


def test_held_out_selection_is_fixed_and_never_shown():
    dev = _pool(25)
    rounds = [held_out_round(dev, r, seed=3, n_feedback=10, n_selection=15) for r in range(1, 6)]
    selections = {tuple(p.id for p in sel) for _, sel in rounds}
    assert len(selections) == 1 and len(next(iter(selections))) == 15  # the same every round
    shown = {p.id for fb, _ in rounds for p in fb}
    assert not shown & set(next(iter(selections))), "a shown problem was scored"
    assert len({tuple(p.id for p in fb) for fb, _ in rounds}) > 1  # feedback varies by round
    assert held_out_round(dev, 2, 3, 10, 15) == rounds[1]  # reproducible
    assert held_out_round(dev, 1, 4, 10, 15)[1] != rounds[0][1]  # another seed, another split


def test_a_held_out_split_too_big_for_its_pool_keeps_both_sides():
    dev = _pool(4)
    with pytest.warns(UserWarning, match="held out from feedback"):
        feedback, selection = held_out_round(dev, 1, 0, n_feedback=25, n_selection=25)
    assert (len(feedback), len(selection)) == (1, 3)


def test_the_described_example_is_never_scored_for_selection():
    """Every task's description quotes its first dev problem (a user's own task with its gold):
    under the held-out protocol it stays on the feedback side, whatever the seed."""
    dev = _pool(12)
    example = dev[0]
    picked = 0
    for seed in range(40):
        undescribed = held_out_round(dev, 1, seed, n_feedback=2, n_selection=8)[1]
        picked += example in undescribed
        feedback, selection = held_out_round(dev, 1, seed, 2, 8, described=example)
        assert example not in selection and len(selection) == 8
        assert {p.id for p in feedback}.isdisjoint(p.id for p in selection)
    assert picked > 0  # without it, the example is scored under some seeds
