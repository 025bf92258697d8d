"""config.json is read back by every later command and may have been edited or handed over: a
value of the wrong type is refused when the file is read, in one line naming the file and the
key, not later as a traceback. A config `adapt` wrote reads back whole."""

from __future__ import annotations

import json

import pytest
from cli_run import cli, error_line

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.run import load_config
from harness_learning.graphs.adapter.stored_config import StoredConfigError
from harness_learning.harnesses.rundir import RunDir

WRONG = {
    "rounds": ("5", "rounds is '5', not an integer or null"),
    "approval": ("yes", "approval is 'yes', not true or false"),
    "policy": ("yolo", "policy is 'yolo', not one of 'strict'"),
    "tools": ("lookup", "tools is 'lookup', not a list of a string"),
    "task_options": ([1], "task_options is [1], not a JSON object"),
    "budget": ({"tokens": "many"}, "budget.tokens is 'many', not an integer or null"),
    "race": ({"fractions": [0.5, "all"]}, "race.fractions is [0.5, 'all'], not a list"),
    "solver": (3, "solver is 3, not a string"),
}


def written(run_dir, **changes) -> RunDir:
    config = AdaptConfig(task="rg:basic_arithmetic", run_dir=str(run_dir))
    data = json.loads(config.with_track_defaults("reasoning").to_json())
    run = RunDir.create(run_dir)
    run.write_config({**data, **changes})
    return run


def test_a_config_adapt_wrote_reads_back(tmp_path):
    config = load_config(written(tmp_path / "run"))
    assert config.rounds == 5 and config.task == "rg:basic_arithmetic"


@pytest.mark.parametrize("key", sorted(WRONG))
def test_a_wrong_type_is_one_line_naming_the_file_and_key(key, tmp_path):
    value, said = WRONG[key]
    run = written(tmp_path / "run", **{key: value})
    with pytest.raises(StoredConfigError) as refused:
        load_config(run)
    assert str(refused.value).startswith(f"{run.config}: unreadable run config: {said}")


def test_resume_of_a_damaged_config_is_one_line(tmp_path):
    run = written(tmp_path / "run", budget=[1])
    result = cli("resume", run.path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert error_line(result).startswith(f"harness-learn: error: {run.config}: unreadable run "
                                         "config: budget is [1], not a JSON object")
