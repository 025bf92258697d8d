"""The racing simulation: its outcome model and its figures (not the figures' values)."""

from __future__ import annotations

import numpy as np

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning_lab.bench.racing import SCENARIOS, outcomes, simulate, table


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
    rule = RaceRule(z=1e9, keep=None)
    figures = simulate(("spread",), seeds=20, problems=16, rule=rule)
    (row,) = figures["rows"]
    assert row["racing_calls"] == row["full_calls"]
    assert row["p_best_racing"] == row["p_best_full"]


def test_frontier_costs_and_quality_of_schedules():
    from harness_learning_lab.bench import racing_frontier as rf

    assert rf.cost((((16, 4), (32, 2)), 64), 8) == 8 * 16 + 4 * 16 + 2 * 32
    rounds = rf.draw(300, 8, 32, 0.5, seed=3)
    keep_all = rf.quality((((8, 8),), 32), rounds)  # keeping everyone is full evaluation
    assert all(abs(q - 1.0) < 1e-9 for q in keep_all.values())
    pick_early = rf.quality((((4, 1),), 32), rounds)  # one survivor after 4 problems
    assert min(pick_early.values()) < 1.0


def test_frontier_sweep_reports_only_schedules_that_save_enough():
    from harness_learning_lab.bench import racing_frontier as rf

    figures = rf.sweep(min_ratio=2.0, seeds=100, problems=16, top=3)
    assert figures["searched"] > 0 and len(figures["best"]) <= 3
    assert all(r["call_ratio"] >= 2.0 for r in figures["best"])
    worst = [r["worst_quality"] for r in figures["best"]]
    assert worst == sorted(worst, reverse=True)
    assert "worst" in rf.table(figures)


def test_quality_error_is_zero_for_the_same_choices_and_positive_otherwise():
    from harness_learning_lab.bench.racing import ratio_se

    assert ratio_se(300, 300, 300, 1000) == 0.0  # both right on exactly the same rounds
    assert ratio_se(300, 300, 150, 1000) > ratio_se(300, 300, 290, 1000) > 0.0
    figures = simulate(("close",), seeds=100, problems=16)
    assert figures["rows"][0]["choice_quality_se"] > 0.0
    assert "+-" in table(figures)


def test_thompson_with_the_full_budget_is_full_evaluation():
    from harness_learning_lab.bench import racing_adaptive as ra
    from harness_learning_lab.bench import racing_frontier as rf

    rounds = rf.draw(200, 8, 32, 0.5, seed=5)
    for sums, best, p_full in rounds.values():
        choice, spent, steps = ra.thompson(sums, budget=8 * 32)
        assert (spent == 8 * 32).all() and (steps.sum(1) == spent).all()
        assert abs((choice == best).mean() - p_full) < 1e-12


def test_chase_stops_early_on_a_clear_round_and_picks_the_best():
    from harness_learning_lab.bench import racing_adaptive as ra

    rng = np.random.default_rng(2)
    p = np.array([0.1, 0.1, 0.95, 0.1, 0.2, 0.1, 0.15, 0.1])
    o = np.stack([outcomes(rng, p, 64, 0.5) for _ in range(50)])
    choice, spent, steps = ra.chase(o, budget=320)
    assert (choice == 2).all()
    assert (spent < 320).all() and (steps.sum(1) == spent).all()


def test_wall_time_counts_waves_of_slots():
    from harness_learning_lab.bench.racing_adaptive import Endpoint

    # staged racing's 128, 64, 64 problems: 2 + 1 + 1 waves of 64, each 5 calls of 1 s
    assert Endpoint().wall_s(np.array([[128, 64, 64]])) == 20.0
    assert Endpoint(slots=32, latency_s=0.5).wall_s(np.array([[4] * 10, [0] * 10])) == 12.5


def test_adaptive_comparison_names_every_policy():
    from harness_learning_lab.bench import racing_adaptive as ra

    figures = ra.compare(seeds=60, problems=32)
    names = [r["policy"] for r in figures["rows"]]
    assert names[0] == "full evaluation" and len(names) == 5
    full = figures["rows"][0]
    assert full["call_ratio"] == 1.0 and full["worst_quality"] == 1.0
    assert all(r["call_ratio"] > 1.5 for r in figures["rows"][1:])
    assert all(name in ra.table(figures) for name in names)


def test_bench_racing_command_prints_the_adaptive_table_and_json():
    import json

    from typer.testing import CliRunner

    from harness_learning.cli import app

    result = CliRunner().invoke(app, ["bench", "racing", "--seeds", "40", "--problems", "16",
                                      "--adaptive", "--json"])
    assert result.exit_code == 0, result.output
    assert "paired chase" in result.output
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert {"call_ratio", "choice_quality_ratio", "adaptive"} <= set(figures)
    assert [r["policy"] for r in figures["adaptive"]["rows"]][2] == "our race rule (RaceRule defaults)"
