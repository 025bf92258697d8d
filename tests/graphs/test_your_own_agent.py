"""The user's journey of examples/your_own_agent with the real local models: one `adapt`
command on one's own data, metric, tool and start harness; then `resume`, `eval` and
`load_harness(run_dir)` from another directory once the original files are gone (SmolLM2 in
both roles: a test of the flow); and the same through `harness_learning.adapt(...)`, exactly as
the example runs, with its default Proposer (Qwen2.5-Coder-1.5B)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "your_own_agent"
SMALL = ["--proposer", "local:smollm2-135m", "--rounds", "1", "--candidates", "1", "--feedback", "2", "--selection", "3",
         "--dev", "5", "--test", "3", "--concurrency", "2", "--proposer-max-tokens", "512"]


@pytest.mark.slow
def test_adapt_then_resume_eval_and_load_from_elsewhere(local_model_url, tmp_path, monkeypatch):
    work = tmp_path / "work"
    shutil.copytree(EXAMPLE, work / "mine")
    monkeypatch.chdir(work)
    run = CliRunner().invoke(app, [
        "adapt", "--task", "mine/tasks.jsonl", "--metric", "mine/shop_metric.py:score",
        "--tools", "mine/shop_tools.py:unit_price", "--harness", "mine/shop_harness.py",
        "--describe", "@mine/task.md", "--run-dir", "runs/shop", *SMALL, "--json"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.output.strip().splitlines()[-1])["rounds"] == 1
    shutil.rmtree(work / "mine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    run_dir = str(work / "runs" / "shop")
    resumed = CliRunner().invoke(app, ["resume", run_dir, "--json"])
    assert resumed.exit_code == 0, resumed.output
    evaluated = CliRunner().invoke(app, ["eval", run_dir, "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    summary = json.loads(evaluated.output.strip().splitlines()[-1])
    assert 0.0 <= summary["seed_score"] <= 1.0 and summary["rounds"] == 1

    from harness_learning import load_harness

    graph = load_harness(run_dir, version=summary["per_round"][0]["sha"])  # the start harness
    out = graph.invoke({"question": "How much do 3 apples cost, in euros?",
                        "fields": {"shop": "north"}})
    tools = [c for c in out["calls"] if c["tool"] == "tool"]
    assert tools and tools[0]["args"]["name"] == "unit_price"
    assert tools[0]["args"]["args"]["shop"] == "north"  # the public field reached the harness
    graph.harness_runner.close()

    # Studio and the LangChain tools serve through `serve`: the same run's tools and fields.
    from harness_learning.graphs.serving.embed import serve

    served = serve(run_dir, version=summary["per_round"][0]["sha"]).invoke(
        {"question": "How much do 3 apples cost, in euros?", "fields": {"shop": "north"}})
    calls = [c for c in served["calls"] if c["tool"] == "tool"]
    assert calls and calls[0]["args"] == tools[0]["args"]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the default Qwen Proposer: a reply that runs to ~1,900 tokens costs ~200 s
def test_the_python_api_in_ten_lines(local_model_url, tmp_path):
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run([sys.executable, str(EXAMPLE / "adapt_in_python.py")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=1700)
    assert done.returncode == 0, done.stderr[-3000:]
    # What a new user sees: no traceback at exit (the warm worker's close), no warning about
    # the example's own sizes (its dev pool holds feedback + selection).
    for sign in ("Traceback", "Exception ignored", "Event loop is closed", "that handles pid",
                 "the dev pool holds"):
        assert sign not in done.stderr, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith(("0 ", "1 ")) and "[(0, '" in lines[0]  # best round, lineage
    assert "'answer':" in lines[1] and "'tool': 'tool'" in lines[1]
    assert (tmp_path / "runs" / "shop-python" / "inputs" / "trainset.jsonl").is_file()
    assert (tmp_path / "runs" / "shop-python" / "inputs" / "shop_tools.py").is_file()
