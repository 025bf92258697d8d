"""`RunDir`: the run directory's layout, spelled once, and the one way to open a run."""

from __future__ import annotations

import json

import pytest
from deep_stack import no_collection_at_depth

from harness_learning.harnesses.rundir import NotARunDirError, RunDir
from harness_learning.harnesses.store import SQLiteLogStore


def test_every_file_of_a_run_lies_under_its_directory(tmp_path):
    run = RunDir(tmp_path / "run")
    files = [run.config, run.log, run.checkpoints, run.solver_cache, run.plot, run.diffs]
    assert [p.name for p in files] == ["config.json", "log.sqlite", "checkpoints.sqlite",
                                       "solver_cache.sqlite", "scores.png", "adopted.diff"]
    assert all(p.parent == tmp_path / "run" for p in files)
    assert not (tmp_path / "run").exists()  # naming paths touches nothing


def test_opening_a_directory_without_a_run_names_the_missing_config(tmp_path):
    with pytest.raises(NotARunDirError, match="config.json not found.*not a run directory"):
        RunDir.open(tmp_path)
    assert not RunDir(tmp_path).is_run()


def test_the_config_round_trips_and_a_broken_one_is_named(tmp_path):
    run = RunDir.create(tmp_path / "run")
    run.write_config({"task": "rg:basic_arithmetic", "rounds": 2})
    assert RunDir.open(run.path).read_config() == {"task": "rg:basic_arithmetic", "rounds": 2}
    assert not list(run.path.glob("*.tmp"))  # the atomic write left no temporary file
    run.config.write_text('{"task": ', encoding="utf-8")
    with pytest.raises(ValueError, match=r"config\.json: unreadable run config"):
        run.read_config()
    run.config.write_text(json.dumps([1, 2]), encoding="utf-8")
    with pytest.raises(ValueError, match="not a JSON object"):
        run.read_config()
    run.config.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")  # past the stack
    with no_collection_at_depth(), pytest.raises(ValueError,
                                                 match=r"config\.json: unreadable run config"):
        run.read_config()


def test_the_store_it_opens_is_the_log_file_it_names(tmp_path):
    run = RunDir(tmp_path / "run")
    assert not run.has_log()
    with run.open_store() as store:
        assert isinstance(store, SQLiteLogStore)
        store.init_run({"k": 1})
    assert run.has_log() and run.log.is_file()
    with SQLiteLogStore(run.path) as again:
        assert again.get_run().config == {"k": 1}
