"""The run config: the race rule is part of what a run directory stores and resumes with."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.estimate import estimate_budget
from harness_learning.graphs.adapter.racing import RaceRule

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
    assert solver_calls("racing") == 6 + 64 + 320  # keep 4 then 3: 8x20 + 4x28 + 3x16
    assert solver_calls("racing", RaceRule(keep=None)) == solver_calls("best_valid")


def test_adapt_rejects_a_bad_race_rule_before_creating_anything(tmp_path):
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["adapt", "--task", "rg:basic_arithmetic", "--run-dir",
                                      str(run_dir), "--policy", "racing",
                                      "--race", '{"kep": [0.5]}'])
    assert result.exit_code == 2
    assert "unknown race rule keys" in result.output and not run_dir.exists()


def test_every_config_field_is_an_adapt_option_with_its_help():
    from harness_learning.graphs.adapter.config import setting_name
    from harness_learning.graphs.adapter.setting_kinds import parts_of

    result = CliRunner().invoke(app, ["adapt", "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for name, info in AdaptConfig.model_fields.items():
        for flag in [p.option for p in parts_of(info)] or [setting_name(name)]:
            assert "--" + flag.replace("_", "-") in result.output, flag
        assert info.description, name  # the one place the option is documented
    assert "--harness" in result.output and "--seed-harness" not in result.output


def test_adapt_options_fill_the_config_as_the_hand_written_flags_did(tmp_path):
    from harness_learning.cli.options import field_values
    from harness_learning.graphs.adapter.config import Budget

    given = {"task": "rg:basic_arithmetic", "run_dir": str(tmp_path), "test": 3, "dev": None,
             "data": None, "index": tmp_path / "idx", "metric": None, "describe": None,
             "tools": ["shop.py:lookup", "mod:tool"], "index_backend": None, "aliases": None,
             "solver": "local", "proposer": "p",
             "solver_params": "", "proposer_max_tokens": 99, "rounds": 2, "candidates": None,
             "policy": "racing", "edit_format": None, "feedback": None, "selection": 4,
             "seed": 1, "seed_harness": None, "line_limit": 200, "patience": None,
             "stop_when_perfect": False,
             "max_solver_calls": 50, "max_tokens": None, "max_cost_usd": None,
             "race": '{"keep": [0.5]}', "concurrency": 8, "report_chars": 12000, "memory_tokens": 200,
             "approval": False, "proposer_logprobs": False, "proposer_echo_stop": False,
             "group_size": 6, "merge": True,
             "operators": "interpreter,vote", "operators_per_round": 1, "repair_turns": 1,
             "split": "paper", "experience": "lib", "experience_shown": 3,
             "experience_tokens": 500, "block_menu": False}
    given["trace"] = "none"
    given["store"] = "postgresql://hl:pw@db:5432/runs"  # its password is cut, never kept
    config = AdaptConfig(**field_values(AdaptConfig, dict(given)))
    assert config.task_options == {"n_test": 3, "index_dir": str(tmp_path / "idx")}
    assert config.proposer_params == {"temperature": 0.7, "max_tokens": 99}
    assert config.solver_params == AdaptConfig.model_fields["solver_params"].get_default(
        call_default_factory=True)
    assert config.budget == Budget(solver_calls=50)
    assert config.race == RaceRule(keep=(0.5,)) and config.policy == "racing"
    assert config.tools == ["shop.py:lookup", "mod:tool"]
    assert config.proposer_logprobs is False and config.group_size == 6 and config.merge is True
    assert config.proposer_echo_stop is False
    assert config.operators == "interpreter,vote" and config.operators_per_round == 1
    assert config.store == "postgresql://hl@db:5432/runs"
    assert config.repair_turns == 1 and config.split == "paper" and config.memory_tokens == 200
    assert config.block_menu is False and config.stop_when_perfect is False
    assert (config.experience, config.experience_shown, config.experience_tokens) == \
        ("lib", 3, 500)


def test_adapt_refuses_an_unknown_policy_with_the_choices(tmp_path):
    result = CliRunner().invoke(app, ["adapt", "--task", "rg:basic_arithmetic", "--run-dir",
                                      str(tmp_path / "run"), "--policy", "greedy"])
    assert result.exit_code == 2
    assert "strict, best_valid, racing" in result.output and not (tmp_path / "run").exists()


def test_the_token_bound_uses_the_cap_each_role_will_send():
    """A spec's `?max_tokens=` wins over the role's run default in the calls (see
    test_spec_params), so the estimate bounds tokens with it too."""
    def tokens(solver: str, proposer: str) -> int:
        config = AdaptConfig(task="x", run_dir="unused", rounds=1, candidates=1, feedback=1,
                             selection=1, solver=solver, proposer=proposer,
                             solver_params={"max_tokens": 256},
                             proposer_params={"max_tokens": 2048})
        return estimate_budget(config, SEED).tokens

    plain = tokens("openai/x", "openai/y")
    assert tokens("openai/x?max_tokens=56", "openai/y") == plain - 200 * 3  # 3 Solver calls
    assert tokens("openai/x", "openai/y?max_tokens=48") < plain
