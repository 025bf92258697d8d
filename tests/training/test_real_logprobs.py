"""The real local model end to end: a strict-track run with a group of 2 per prompt logs both
samples with llama.cpp's log-probs, collect-edits makes a teacher run, and offline GRPO takes
its ratio against the logged log-probs (the tiny test model shares SmolLM2's tokenizer)."""

import json

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app

pytestmark = pytest.mark.slow
SMOL = "local:smollm2-135m"  # the tiny test model shares its tokenizer
SMALL = {"task_options": {"n_dev": 3, "n_test": 1}, "feedback": 1, "selection": 1,
         "concurrency": 1, "proposer_params": {"temperature": 0.7, "max_tokens": 48}}


@pytest.fixture(scope="module")
def real_run(local_model_url, tmp_path_factory):
    from harness_learning.graphs.adapter.api import adapt

    run_dir = tmp_path_factory.mktemp("real") / "run"
    adapt(task="rg:basic_arithmetic", run_dir=run_dir, rounds=1, candidates=1, group_size=2,
          proposer=SMOL, **SMALL)
    return run_dir


def test_group_of_two_logged_with_the_endpoints_logprobs(real_run):
    from harness_learning.harnesses.store import SQLiteLogStore

    with SQLiteLogStore(real_run) as store:
        proposals = list(store.iter_proposals())
        (decision,) = list(store.iter_decisions())
    assert sorted(p.id for p in proposals) == ["r1-c0", "r1-c1"]
    assert len({p.group_id for p in proposals}) == 1 and all(p.reward is not None
                                                            for p in proposals)
    assert list(decision.scores["candidates"]) == ["0"]
    for p in proposals:
        assert p.logprobs and "".join(t["token"] for t in p.logprobs) == p.completion
        assert all(t["logprob"] <= 0 for t in p.logprobs)


def test_offline_grpo_uses_the_logged_logprobs(real_run, tiny_dir, tmp_path):
    result = CliRunner().invoke(app, [
        "train", "grpo-offline", "--logs", str(real_run), "--model", str(tiny_dir),
        "--out", str(tmp_path / "out"), "--max-steps", "1", "--batch-size", "2",
        "--no-drop-flat-groups", "--max-length", "4096", "--no-save"])
    assert result.exit_code == 0, result.output
    assert "data: logged log-probs used for 2/2 completions" in result.output
    assert "importance ratio vs the logged log-probs, step 1:" in result.output


def test_collect_edits_makes_a_teacher_run(local_model_url, tmp_path):
    out = tmp_path / "teach"
    result = CliRunner().invoke(app, [
        "collect-edits", "--proposer", SMOL, "--tasks", "rg:basic_arithmetic",
        "--per-task", "2", "--out", str(out), "--feedback", "1", "--selection", "1",
        "--proposer-max-tokens", "48", "--concurrency", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    (task,) = summary["tasks"]
    assert task["run_dir"] == str(out / "rg_basic_arithmetic") and task["proposals"] == 2
    assert summary["successful"] == task["successful"] <= task["valid"] <= 2
