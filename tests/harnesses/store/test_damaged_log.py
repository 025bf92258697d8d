"""A log read back from a run directory is data someone may have damaged or crafted: a JSON
column that is not JSON, or a value its record's field cannot hold, is one line naming the log
(`LogStoreError`), from the store and from `harness-learn show`, never a traceback."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_run import cli, error_line

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import LogStoreError, SQLiteLogStore


def damaged_run(tmp_path) -> RunDir:
    """A run directory whose log holds one version and one event, the run's config and the
    event's payload cut short."""
    run = RunDir.create(tmp_path / "run")
    config = json.loads(AdaptConfig(task="rg:basic_arithmetic", run_dir=str(run.path))
                        .with_track_defaults("reasoning").to_json())
    run.write_config(config)
    with SQLiteLogStore(run.path) as store:
        store.init_run(config)
        sha = store.put_version("def build_graph(tools):\n    pass\n")
        store.put_results(sha, "selection", 0, [ProblemResult("p1", "4", 1.0)])
        store.append_event("run_started", {"round": 0})
    with sqlite3.connect(run.log) as conn:
        conn.execute("UPDATE events SET payload = '{\"round\": 0'")
        conn.execute("UPDATE runs SET config = '{\"task\": '")
        conn.execute("UPDATE evaluations SET score = 'high'")
        conn.execute("UPDATE versions SET round = '[1]'")
    return run


def test_a_json_column_that_is_not_json_is_one_line_naming_the_log(tmp_path):
    run = damaged_run(tmp_path)
    with SQLiteLogStore(run.path) as store, pytest.raises(LogStoreError) as refused:
        list(store.iter_events())
    message = str(refused.value)
    assert message.startswith(f"{run.log}: a stored payload is not JSON (") and "\n" not in message


def test_a_value_its_field_cannot_hold_is_one_line_naming_the_log(tmp_path):
    run = damaged_run(tmp_path)
    with SQLiteLogStore(run.path) as store:
        with pytest.raises(LogStoreError, match="a stored ProblemResult record is unreadable: "
                                                "score is 'high', not a number or null"):
            list(store.iter_evaluations())
        with pytest.raises(LogStoreError, match=f"^{run.log}: a stored Version record is "
                                                "unreadable: round is '\\[1\\]', not an integer"):
            list(store.iter_versions())


def test_show_of_a_damaged_log_is_one_line(tmp_path):
    run = damaged_run(tmp_path)
    result = cli("show", run.path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert error_line(result).startswith(f"harness-learn: error: {run.log}: a stored config "
                                         "is not JSON"), error_line(result)
