"""The experiment path against the real local model (SmolLM2-135M, Solver and Proposer: the
experiments' default Proposer, Qwen2.5-Coder-1.5B, spends a minute on one prompt, and its whole
run is tested by the Python API example's test): a one-type, one-round experiment runs, and its
report is rebuilt from the logs with identical tables."""

from __future__ import annotations

import asyncio

import pytest

from harness_learning_lab.experiments.collect import collect
from harness_learning_lab.experiments.config import ExperimentSpec, Tasks
from harness_learning_lab.experiments.report import REPORT, write_report
from harness_learning_lab.experiments.runner import run_experiment


@pytest.mark.slow
def test_tiny_experiment_with_the_local_model(local_model_url, tmp_path):
    spec = ExperimentSpec(name="local", track="reasoning", scale="smoke", seeds=[0], rounds=1,
                          candidates=1, feedback=1, selection=1, n_dev=1, n_test=1,
                          baselines=["seed"], proposer="local:smollm2-135m",
                          solver_max_tokens=32, proposer_max_tokens=64,
                          concurrency=1, tasks=Tasks(test=["rg:count_bits"]))
    asyncio.run(run_experiment(spec, tmp_path, log=lambda m: None))
    records, unfinished = collect(tmp_path)
    assert not unfinished
    assert sorted(r.method for r in records) == ["seed", "untrained"]
    untrained = next(r for r in records if r.method == "untrained")
    assert untrained.edits == 1 and untrained.spent["proposer_calls"] == 1
    assert untrained.spent["solver_calls"] >= 2 and untrained.meta["wall_s"] > 0
    assert all(score is not None for _, score in untrained.curve)  # every version was tested
    first = write_report(tmp_path).read_text()
    (tmp_path / REPORT).unlink()
    assert write_report(tmp_path).read_text() == first
    assert "rg:count_bits" in first and "not trained" in first
