"""Experiment configs: the checked-in files load at both scales, with the paper's settings; bad
files fail naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_learning_lab.experiments.config import load_spec
from harness_learning_lab.experiments.runner import plan_runs

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"


def test_checked_in_configs_hold_the_papers_settings():
    reasoning = load_spec(EXPERIMENTS / "reasoning.toml")
    assert (reasoning.policy, reasoning.candidates, reasoning.rounds) == ("strict", 1, 5)
    assert (reasoning.n_dev, reasoning.n_test) == (25, 75)
    assert not set(reasoning.tasks.train) & set(reasoning.tasks.test)
    qa = load_spec(EXPERIMENTS / "qa.toml")
    assert (qa.policy, qa.candidates, qa.rounds, qa.feedback, qa.selection) == (
        "best_valid", 8, 10, 6, 64)
    assert qa.tasks.train == ["hotpotqa"] and set(qa.tasks.test) == {"musique", "2wiki"}


@pytest.mark.parametrize("name", ["reasoning", "qa"])
def test_smoke_scale_is_tiny(name):
    spec = load_spec(EXPERIMENTS / f"{name}.toml", "smoke")
    assert spec.scale == "smoke" and len(spec.tasks.test) <= 2 and spec.rounds <= 2
    assert spec.proposer_max_tokens <= 256 and spec.seeds == [0]


def test_plan_matches_candidate_counts(tmp_path):
    spec = load_spec(EXPERIMENTS / "qa.toml")
    plans = plan_runs(spec, tmp_path, lambda task: {})
    by = {(p.method, p.task, p.seed): p.config for p in plans}
    assert (by["single_step", "musique", 0].rounds, by["single_step", "musique", 0].candidates) == (1, 8)
    assert (by["relay", "musique", 0].rounds, by["relay", "musique", 0].candidates) == (8, 1)
    assert ("train_logs", "hotpotqa", 2) in by and ("trained", "musique", 0) not in by
    reasoning = plan_runs(load_spec(EXPERIMENTS / "reasoning.toml"), tmp_path, lambda t: {})
    assert not any(p.method == "relay" for p in reasoning)  # 5 x 1 is the main run itself


def test_bad_files_name_the_file_and_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ntrack = "qa"\nroundz = 3\n[tasks]\ntest = ["musique"]\n')
    with pytest.raises(ValueError, match=r"bad\.toml.*roundz"):
        load_spec(bad)
    bad.write_text('name = "x"\ntrack = "qa"\n[tasks]\ntest = ["musique"]\nhard = ["2wiki"]\n')
    with pytest.raises(ValueError, match="2wiki"):
        load_spec(bad)
    bad.write_text('name = "x"\ntrack = "qa"\n[tasks]\ntest = [')
    with pytest.raises(ValueError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(ValueError, match="scale"):
        load_spec(EXPERIMENTS / "qa.toml", "huge")
    bad.write_text('name = "x"\ntrack = "qa"\nrace = {kep = [0.5]}\n[tasks]\ntest = ["musique"]\n')
    with pytest.raises(ValueError, match=r"bad\.toml.*unknown race rule keys \['kep'\]"):
        load_spec(bad)


def test_a_race_rule_in_the_file_reaches_every_run(tmp_path):
    from harness_learning.graphs.adapter.racing import RaceRule

    spec = tmp_path / "race.toml"
    spec.write_text('name = "x"\ntrack = "qa"\npolicy = "racing"\n'
                    'race = {fractions = [0.3125, 0.75, 1], keep = [0.5, 0.75]}\n'
                    '[tasks]\ntest = ["musique"]\n')
    plans = plan_runs(load_spec(spec), tmp_path, lambda task: {})
    rule = RaceRule(fractions=(0.3125, 0.75, 1), keep=(0.5, 0.75))
    assert plans and all(p.config.race == rule for p in plans)
    assert load_spec(EXPERIMENTS / "qa.toml").race_rule() == RaceRule()
