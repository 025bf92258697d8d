"""Racing on logged rounds: reading rounds from a run log, fitting rho, the bootstrap replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store.sqlite import SQLiteLogStore
from harness_learning_lab.bench.racing import outcomes
from harness_learning_lab.bench.racing_logged import (
    LoggedRound,
    fit_rho,
    logged_rounds,
    pooled_rho,
    replay,
    table,
)


def _round(names: str, scores: np.ndarray) -> LoggedRound:
    return LoggedRound("x", 1, list(names), scores, [False] * len(names))


@pytest.mark.parametrize("rho", [0.3, 0.8])
def test_the_fit_recovers_the_simulations_rho(rho):
    rng = np.random.default_rng(3)
    rounds = [outcomes(rng, rng.uniform(0.3, 0.6, 8), 256, rho) for _ in range(10)]
    assert pooled_rho(rounds) == pytest.approx(rho, abs=0.06)


def test_the_interval_brackets_the_fit_and_narrows_with_more_problems():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.3, 0.6, 8)
    small = fit_rho([_round("abcdefgh", outcomes(rng, p, 64, 0.5))], 300)
    large = fit_rho([_round("abcdefgh", outcomes(rng, p, 1024, 0.5))], 300)
    for fit in (small, large):
        assert fit["rho_low"] <= fit["rho"] <= fit["rho_high"]
    assert large["rho_high"] - large["rho_low"] < small["rho_high"] - small["rho_low"]


def _result(pid: str, score: float) -> ProblemResult:
    return ProblemResult(pid, "a", score, latency_s=0.1, tokens=1)


def test_rounds_are_read_from_a_run_log(tmp_path):
    rng = np.random.default_rng(5)
    with SQLiteLogStore(tmp_path) as store:
        store.init_run({})
        current = store.put_version("# current\n", None, 0, "current")
        shas = [current] + [store.put_version(f"# v{i}\n", current, 1, f"cand{i}")
                            for i in range(1, 4)]
        ids = [f"p{j}" for j in range(20)]
        for sha in shas[:3]:  # three fully evaluated candidates
            store.put_results(sha, "selection", 1, [_result(i, float(rng.random() < 0.5))
                                                    for i in ids])
        store.put_results(shas[3], "selection", 1, [_result(i, 1.0) for i in ids[:8]])  # raced out
        store.put_results(shas[0], "selection", 2, [_result(i, 1.0) for i in ids])  # alone
        store.put_results(shas[1], "feedback", 1, [_result("f0", 1.0)])
    (only,) = logged_rounds(tmp_path)
    assert only.round == 1 and only.names == ["current", "cand1", "cand2"]
    assert only.scores.shape == (3, 20) and only.current == [True, False, False]
    (row,) = replay([only], problems=20, draws=20)
    assert row["names"] == ["cand1", "cand2"]  # the current version is not raced


def test_a_directory_without_a_log_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run log"):
        logged_rounds(tmp_path)
    assert not (tmp_path / "log.sqlite").exists()  # reading created nothing


def test_replay_finds_a_clear_winner_with_fewer_calls():
    rng = np.random.default_rng(6)
    p = np.array([0.3, 0.3, 0.3, 0.9, 0.3, 0.3, 0.3, 0.3])
    (row,) = replay([_round("abcdefgh", outcomes(rng, p, 128, 0.5))],
                    problems=64, draws=200)
    assert row["p_best_full"] == row["p_best_racing"] == 1.0
    assert row["regret_full"] == row["regret_racing"] == 0.0
    assert row["identical"] == []
    assert row["call_ratio"] > 2.0
    assert "a 0." in table({"rho": 0.5, "rho_low": 0.4, "rho_high": 0.6}, [row], 64, 200)


def test_the_pool_interval_is_a_point_for_a_clear_winner_and_opens_in_near_ties():
    rng = np.random.default_rng(6)
    clear = np.array([0.3, 0.3, 0.3, 0.9, 0.3, 0.3, 0.3, 0.3])
    (row,) = replay([_round("abcdefgh", outcomes(rng, clear, 128, 0.5))], problems=64,
                    draws=100, pool_resamples=5)
    assert row["quality_pool_interval"] == [1.0, 1.0]
    near = np.linspace(0.40, 0.47, 8)
    (row,) = replay([_round("abcdefgh", outcomes(rng, near, 128, 0.5))], problems=32,
                    draws=100, pool_resamples=20)
    low, high = row["quality_pool_interval"]
    assert 0.0 < low < high  # which candidate is best changes with the pool
    assert "pool resampled too: 95% interval" in table(
        {"rho": 0.5, "rho_low": 0.4, "rho_high": 0.6}, [row], 32, 100)
    rounds = [_round("abcdefgh", outcomes(rng, near, 128, 0.5)) for _ in range(2)]
    plain = replay(rounds, problems=32, draws=50)
    assert "quality_pool_interval" not in plain[0]  # off by default: it costs resamples x draws
    with_pool = replay(rounds, problems=32, draws=50, pool_resamples=3)
    for a, b in zip(plain, with_pool, strict=True):  # asking for it moves no other figure
        assert a == {k: v for k, v in b.items() if k != "quality_pool_interval"}


def test_replay_counts_any_tied_best_as_right():
    same = np.tile((np.arange(40) % 3 == 0).astype(float), (4, 1))
    (row,) = replay([_round("abcd", same)], problems=16, draws=50)
    assert row["p_best_full"] == row["p_best_racing"] == 1.0
    assert row["identical"] == [["a", "b", "c", "d"]]
    assert "a = b = c = d" in table({"rho": 1.0, "rho_low": 1.0, "rho_high": 1.0}, [row], 16, 50)


def _log_round(run_dir, p: np.ndarray, n: int, rho: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = outcomes(rng, p, n, rho)
    with SQLiteLogStore(run_dir) as store:
        store.init_run({})
        for k, row in enumerate(scores):
            sha = store.put_version(f"# candidate {k}\n", None, 1, f"c{k}")
            store.put_results(sha, "selection", 1, [_result(f"p{j}", float(v))
                                                    for j, v in enumerate(row)])


def test_bench_racing_command_replays_logged_rounds(tmp_path):
    import json

    from typer.testing import CliRunner

    from harness_learning.cli import app

    _log_round(tmp_path / "a", np.full(8, 0.4), 64, 0.8, 7)
    _log_round(tmp_path / "b", np.linspace(0.2, 0.6, 8), 64, 0.8, 8)
    result = CliRunner().invoke(app, ["bench", "racing", "--seeds", "30", "--problems", "16",
                                      "--from-log", str(tmp_path / "a"),
                                      "--from-log", str(tmp_path / "b"),
                                      "--pool-resamples", "3", "--json"])
    assert result.exit_code == 0, result.output
    logged = json.loads(result.output.strip().splitlines()[-1])["logged"]
    assert [Path(r["source"]).name for r in logged["rows"]] == ["a", "b"]
    assert all(len(r["quality_pool_interval"]) == 2 for r in logged["rows"])
    assert 0.5 < logged["rho"] < 1.0 and logged["simulated_at_fit"]["rho"] == round(logged["rho"], 2)
    assert all(0.0 <= r["regret_full"] < 0.2 and 0.0 <= r["regret_racing"] < 0.2
               for r in logged["rows"])
    assert "rho fitted" in result.output


def test_bench_racing_command_names_a_missing_log(tmp_path):
    from typer.testing import CliRunner

    from harness_learning.cli import app

    result = CliRunner().invoke(app, ["bench", "racing", "--from-log", str(tmp_path / "none")])
    assert result.exit_code != 0 and "no run log" in result.output


def test_rounds_where_no_candidate_is_ever_right_fit_no_rho():
    never = _round("abcd", np.zeros((4, 32)))
    assert fit_rho([never], 50) == {"rho": None, "rho_low": None, "rho_high": None}
    (row,) = replay([never], problems=16, draws=20)
    text = table(fit_rho([never], 50), [row], 16, 20)
    assert "cannot be fitted" in text and row["p_best_full"] == 1.0


def test_bench_racing_command_skips_the_fit_simulation_when_no_rho_fits(tmp_path):
    import json

    from typer.testing import CliRunner

    from harness_learning.cli import app

    _log_round(tmp_path, np.zeros(4), 32, 0.5, 9)  # SmolLM2 on QA: everything wrong
    result = CliRunner().invoke(app, ["bench", "racing", "--seeds", "20", "--problems", "16",
                                      "--from-log", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert "cannot be fitted" in result.output
    assert json.loads(result.output.strip().splitlines()[-1])["logged"]["simulated_at_fit"] is None
