"""`AdaptConfig` is the one settings model: its partial form serves the settings file and
Studio, a setting has one name on every surface, and a bad value is one line naming the flag,
key or setting, on every surface alike."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from harness_learning.cli.main import main
from harness_learning.graphs.adapter.config import AdaptConfig, Budget
from harness_learning.graphs.adapter.config_file import ConfigFileError, settings_values
from harness_learning.graphs.adapter.context_schema import config_values
from harness_learning.graphs.adapter.racing import RaceRule


def test_the_partial_model_makes_every_field_optional_under_its_setting_name() -> None:
    partial = AdaptConfig.partial()
    assert not [name for name, info in partial.model_fields.items() if info.is_required()]
    assert "harness" in partial.model_fields and "seed_harness" not in partial.model_fields
    assert set(partial.model_fields) == {("harness" if n == "seed_harness" else n)
                                         for n in AdaptConfig.model_fields}
    assert partial.model_fields["rounds"].description == \
        AdaptConfig.model_fields["rounds"].description
    with pytest.raises(ValidationError):
        partial.model_validate({"roundz": 2})


def test_both_names_of_the_start_harness_load_and_config_json_keeps_its_key(tmp_path) -> None:
    by_flag = AdaptConfig(task="t", run_dir=str(tmp_path), harness="h.py")
    by_field = AdaptConfig.from_dict({"task": "t", "run_dir": str(tmp_path),
                                      "seed_harness": "h.py"})
    assert by_flag == by_field and by_flag.seed_harness == "h.py"
    assert json.loads(by_flag.to_json())["seed_harness"] == "h.py"
    assert settings_values({"seed_harness": "a.py"}) == settings_values({"harness": "a.py"}) \
        == {"seed_harness": "a.py"}


def test_a_nested_table_is_a_model_and_keeps_which_keys_were_given() -> None:
    values = settings_values({"budget": {"tokens": 90}, "race": {"keep": [0.5]}})
    assert values["budget"] == Budget(tokens=90) and values["budget"].model_fields_set == {"tokens"}
    assert values["race"] == RaceRule(keep=(0.5,))


@pytest.mark.parametrize(("settings", "says"), [
    ({"rounds": "2"}, "setting 'rounds' must be an integer, not a string ('2')"),
    ({"rounds": -1}, "setting 'rounds': Input should be greater than or equal to 0 (got -1)"),
    ({"max_tokens": -5}, "setting 'budget.tokens': Input should be greater than or equal to 0"),
    ({"policy": "greedy"}, "setting 'policy' must be one of 'strict', 'best_valid'"),
    ({"race": {"fractions": [0.5]}}, "setting 'race': RaceRule.fractions must rise strictly"),
])
def test_a_studio_setting_is_refused_in_the_files_format(settings, says) -> None:
    with pytest.raises(ConfigFileError) as refused:
        config_values(settings)
    assert says in str(refused.value) and "\n" not in str(refused.value)
    assert refused.value.hint and "\n" not in refused.value.hint


@pytest.mark.parametrize(("flags", "says"), [
    (["--rounds", "-1"], "--rounds: Input should be greater than or equal to 0 (got -1)"),
    (["--max-solver-calls", "-3"], "--max-solver-calls: Input should be greater than or equal"),
    (["--concurrency", "0"], "--concurrency: Input should be greater than or equal to 1"),
])
def test_a_bad_flag_is_one_line_naming_it_before_anything_is_written(flags, says, tmp_path,
                                                                     capsys) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exited:
        main(["adapt", "--task", "rg:basic_arithmetic", "--run-dir", str(run_dir), *flags])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("harness-learn: error: ") and says in lines[0], lines[0]
    assert " · hint: " in lines[0] and not run_dir.exists()
