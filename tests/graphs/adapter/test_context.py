"""The adapter context: built from the config with explicit overrides, closed by `async with`."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import SumTask

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import prepare
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import LogStore


def config(tmp_path, task: str = "sums") -> AdaptConfig:
    return AdaptConfig(task=task, run_dir=str(tmp_path / "run"), rounds=1, candidates=1,
                       feedback=2, selection=2).with_track_defaults("reasoning")


def test_overrides_replace_what_the_config_would_build_and_cannot_be_reassigned(tmp_path):
    task = SumTask(4)
    ctx = AdapterContext.from_config(config(tmp_path), task=task)
    assert ctx.task is task and sorted(ctx.problems) == [p.id for p in task.dev()]
    with pytest.raises(AttributeError):
        ctx.task = SumTask(2)  # type: ignore[misc]
    assert not ctx.started("pool") and not ctx.started("store")  # nothing built unasked


def test_async_with_closes_the_pool_and_store_it_started(tmp_path):
    async def go() -> AdapterContext:
        async with AdapterContext.from_config(config(tmp_path), task=SumTask(2)) as ctx:
            assert isinstance(ctx.store, LogStore)
            ctx.store.init_run({"t": 1})
            _ = ctx.pool
        return ctx

    ctx = asyncio.run(go())
    with pytest.raises(RuntimeError, match="context is closed"):
        _ = ctx.store
    with RunDir(tmp_path / "run").open_store() as store:  # written and closed cleanly
        assert store.get_run().config == {"t": 1}


def test_prepare_knows_the_track_from_the_name_without_loading_the_task(tmp_path, monkeypatch):
    import harness_learning.evals.registry as registry
    import harness_learning.graphs.adapter.context as context
    import harness_learning.graphs.adapter.inputs as inputs
    import harness_learning.graphs.adapter.run as run

    def refuse(*args, **kwargs):
        raise AssertionError("prepare loaded the task")

    monkeypatch.setattr(registry, "get_task", refuse)
    for module in (context, inputs, run):
        monkeypatch.setattr(module, "open_task", refuse)
    qa = prepare(AdaptConfig(task="hotpotqa", run_dir=str(tmp_path / "qa"))).config
    assert (qa.policy, qa.edit_format, qa.candidates) == ("best_valid", "whole_program", 8)
    rg = prepare(AdaptConfig(task="rg:basic_arithmetic", run_dir=str(tmp_path / "rg"))).config
    assert (rg.policy, rg.edit_format, rg.candidates) == ("strict", "search_replace", 1)
    assert RunDir.open(tmp_path / "rg").read_config()["policy"] == "strict"


def test_an_unknown_task_is_refused_before_a_run_directory_is_made(tmp_path):
    with pytest.raises(ValueError, match="unknown task 'rg:no_such_dataset'"):
        prepare(AdaptConfig(task="rg:no_such_dataset", run_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()
