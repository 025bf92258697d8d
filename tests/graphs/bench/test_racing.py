"""The racing simulation: its outcome model and its figures (not the figures' values)."""

from __future__ import annotations

import numpy as np

from graphs.adapter.racing import RaceRule
from graphs.bench.racing import SCENARIOS, outcomes, simulate, table


def test_outcomes_keep_each_rate_and_correlate_with_rho():
    rng = np.random.default_rng(0)
    p = np.array([0.2, 0.5, 0.5, 0.8])
    loose, tight = outcomes(rng, p, 20_000, 0.0), outcomes(rng, p, 20_000, 0.9)
    assert np.allclose(loose.mean(axis=1), p, atol=0.02)
    assert np.allclose(tight.mean(axis=1), p, atol=0.02)
    agree = lambda m: (m[1] == m[2]).mean()  # noqa: E731  (two candidates at 0.5)
    assert agree(loose) < 0.55 and agree(tight) > 0.85


def test_each_scenario_has_eight_candidates_and_one_best():
    rng = np.random.default_rng(1)
    for make in SCENARIOS.values():
        p = make(rng)
        assert p.shape == (8,) and (p > 0).all() and (p < 1).all()


def test_simulate_counts_calls_and_choices():
    figures = simulate(("one_better",), seeds=60, problems=32, calls_per_problem=5)
    (row,) = figures["rows"]
    assert row["full_calls"] == 8 * 32 * 5
    assert row["racing_calls"] < row["full_calls"]
    assert 0.0 <= row["p_best_racing"] <= 1.0 and 0.0 <= row["p_best_full"] <= 1.0
    assert figures["call_ratio"] == row["call_ratio"] > 1.0
    assert "one_better" in table(figures)


def test_no_early_stop_and_no_halving_is_full_evaluation():
    rule = RaceRule(z=1e9, halving=False)
    figures = simulate(("spread",), seeds=20, problems=16, rule=rule)
    (row,) = figures["rows"]
    assert row["racing_calls"] == row["full_calls"]
    assert row["p_best_racing"] == row["p_best_full"]
