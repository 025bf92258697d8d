"""The run config: the race rule is part of what a run directory stores and resumes with."""

from __future__ import annotations

import json

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.estimate import estimate_budget
from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.graphs.cli import app
from typer.testing import CliRunner

SEED = "def solve(problem, tools):\n    return tools.llm(problem)\n"  # one Solver call


def test_the_race_rule_round_trips_through_the_stored_config(tmp_path):
    rule = RaceRule(fractions=(0.3125, 0.75, 1.0), keep=(0.5, 0.75), z=2.0)
    config = AdaptConfig(task="rg:basic_arithmetic", run_dir=str(tmp_path), race=rule)
    stored = json.loads(config.to_json())
    assert stored["race"]["keep"] == [0.5, 0.75]
    back = AdaptConfig.from_json(config.to_json())
    assert back.race == rule and back == config
    assert back.with_track_defaults("qa").race == rule


def test_a_config_stored_without_a_race_rule_gets_the_default(tmp_path):
    stored = json.loads(AdaptConfig(task="rg:basic_arithmetic", run_dir=str(tmp_path)).to_json())
    del stored["race"]
    assert AdaptConfig.from_json(json.dumps(stored)).race == RaceRule()


def test_the_estimate_counts_what_a_race_can_spend():
    def solver_calls(policy: str, race: RaceRule | None = None) -> int:
        config = AdaptConfig(task="x", run_dir="unused", rounds=1, candidates=8, feedback=6,
                             selection=64, policy=policy, race=race or RaceRule())
        return estimate_budget(config, SEED).solver_calls

    assert solver_calls("best_valid") == 6 + 64 + 8 * 64
    assert solver_calls("racing") == 6 + 64 + 256
    assert solver_calls("racing", RaceRule(keep=None)) == solver_calls("best_valid")


def test_adapt_rejects_a_bad_race_rule_before_creating_anything(tmp_path):
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["adapt", "--task", "rg:basic_arithmetic", "--run-dir",
                                      str(run_dir), "--policy", "racing",
                                      "--race", '{"kep": [0.5]}'])
    assert result.exit_code == 2
    assert "unknown race rule keys" in result.output and not run_dir.exists()
