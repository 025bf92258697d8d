"""The adapter's settings schema (`AdapterSettings`, Studio's form) and how settings become a
run's config, or are refused by a started one."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_learning.graphs.adapter.config import AdaptConfig, setting_name
from harness_learning.graphs.adapter.config_file import SettingError
from harness_learning.graphs.adapter.context_schema import (
    AdapterSettings,
    UnknownSetting,
    config_values,
    conflicts,
    given_settings,
)
from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.graphs.adapter.server_threads import (
    RUNS_ENV,
    settings_config,
    studio_runs_root,
    thread_config,
)
from harness_learning.graphs.adapter.setting_kinds import parts_of

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_every_field_is_a_setting_with_its_help() -> None:
    form = AdapterSettings.model_json_schema()["properties"]
    for name, info in AdaptConfig.model_fields.items():
        parts = parts_of(info)
        names = [p.option for p in parts]
        if name != "budget":  # the budget: its parts only
            names.append(setting_name(name))
        assert names and all(n in form for n in names), name
    assert "harness" in form and "seed_harness" not in form and "budget" not in form
    assert form["seed"]["description"] == "Seed of sampling and Proposer samples."
    assert form["max_tokens"]["description"] == "Budget: tokens (Solver+Proposer)."
    assert form["solver_params"]["default"] == {"temperature": 0.0, "max_tokens": 256}


def test_settings_become_config_values() -> None:
    given = given_settings(AdapterSettings(rounds=2, dev=4, data="q.jsonl", harness="h.py",
                                           max_solver_calls=9, race={"keep": [0.5, 0.75]},
                                           policy=None))
    assert given == {"rounds": 2, "dev": 4, "data": "q.jsonl", "harness": "h.py",
                     "max_solver_calls": 9, "race": {"keep": [0.5, 0.75]}}  # set, not None
    values = config_values(given)
    assert values["task_options"] == {"n_dev": 4, "path": "q.jsonl"}
    assert values["seed_harness"] == "h.py" and values["budget"].solver_calls == 9
    assert values["race"].keep == (0.5, 0.75) and values["race"].fractions == RaceRule().fractions
    assert given_settings({"rounds": 1, "thread_id": "t", "__pregel_x": 1}) == {"rounds": 1}
    assert given_settings(None) == {}


def test_a_field_name_is_its_settings_alias_and_an_unknown_key_is_refused() -> None:
    """`seed_harness` (the TOML key) is taken as `harness` (the form's name); a key the form
    lacks is one line naming it and the closest setting, never silently dropped."""
    assert given_settings(AdapterSettings(seed_harness="h.py")) == {"harness": "h.py"}
    assert given_settings({"seed_harness": "h.py", "rounds": 1}) == {"harness": "h.py",
                                                                     "rounds": 1}
    with pytest.raises(UnknownSetting, match=r"^unknown setting 'roundz': did you mean "
                                             r"'rounds'\?") as typo:
        given_settings(AdapterSettings(roundz=2))
    assert "\n" not in str(typo.value)
    assert str(typo.value).endswith("the settings are the adapter's form")  # as a file's key
    assert isinstance(typo.value, SettingError) and typo.value.hint.startswith("did you mean")
    with pytest.raises(UnknownSetting, match="'model'"):
        given_settings({"rounds": 1, "model": "x"})
    with pytest.raises(UnknownSetting, match="given twice"):
        given_settings({"harness": "a.py", "seed_harness": "b.py"})


def test_settings_config_fills_defaults_per_thread(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(RUNS_ENV, raising=False)
    assert REPO_ROOT not in studio_runs_root().parents  # generated files never reload the server
    monkeypatch.setenv(RUNS_ENV, str(tmp_path))
    cfg = settings_config({"rounds": 2, "solver": "x"}, thread_id="a/b c")
    assert cfg.task == "rg:basic_arithmetic" and cfg.run_dir == str(tmp_path / "a_b_c")
    assert (cfg.rounds, cfg.candidates, cfg.policy) == (2, 1, "strict")  # reasoning defaults
    with pytest.raises(ValueError, match="unknown task"):
        settings_config({"task": "nope"})


def test_a_started_run_keeps_its_settings(monkeypatch, tmp_path) -> None:
    """A thread that has a run directory reopens it; settings that contradict it are named."""
    from harness_learning.graphs.adapter.run import prepare

    monkeypatch.setenv(RUNS_ENV, str(tmp_path))
    run_dir = tmp_path / "run"
    stored = prepare(settings_config({"rounds": 2, "dev": 4, "run_dir": str(run_dir)})).config
    assert thread_config(str(run_dir), {}, "t").config == stored  # nothing repeated
    assert thread_config(str(run_dir), {"rounds": 2, "dev": 4, "run_dir": str(run_dir)},
                         "t").config == stored  # the same settings again
    assert conflicts({"dev": 4, "approval": False}, stored) == []
    assert conflicts({"rounds": 3, "dev": 5}, stored) == ["task_options: {'n_dev': 5} != "
                                                          "{'n_dev': 4}", "rounds: 3 != 2"]
    with pytest.raises(ValueError, match=r"rounds: 3 != 2.*start a new thread"):
        thread_config(str(run_dir), {"rounds": 3}, "t")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing else written
