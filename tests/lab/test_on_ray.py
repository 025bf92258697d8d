"""The lab's grids on Ray (`bench peers --ray`, `experiment --ray`): on a local cluster of 2 CPUs
(the lab shipped in the runtime_env as on a real cluster) each grid gives the serial run's
table, a rerun reads every finished run back without sending it, and a cluster that does not
answer or a missing Ray is one line."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from sim_adapt import EDIT, arithmetic
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.harnesses.llm.simserver import SimServer
from harness_learning.harnesses.seeds import seed_source
from harness_learning_lab import ray_cluster
from harness_learning_lab.experiments.collect import collect
from harness_learning_lab.experiments.config import ExperimentSpec, Tasks
from harness_learning_lab.experiments.on_ray import on_cluster
from harness_learning_lab.experiments.runner import run_experiment

ray = pytest.importorskip("ray")
pytest.importorskip("gepa")

REASONING = Path(__file__).parents[2] / "experiments" / "reasoning.toml"
SEED = seed_source("reasoning_direct")
WHOLE = "```python\n" + SEED.replace('PROMPT = """', 'PROMPT = """MARK-A ') + "```"
GRID = ("--smoke", "--system", "best_valid", "--system", "gepa")  # 2 runs, 2 workers


def rules() -> list:
    """The simulated models of test_peers: the Solver is right only under the MARK-A edit."""
    solver = (r"MARK-A [\s\S]*Problem: Calculate (?P<expr>[-+*/() \d]+)\.",
              lambda m: f"Answer: {arithmetic(m['expr'])}")
    return [(r"## Current Component", WHOLE), (r"SEARCH", EDIT.format(old="", new="MARK-A ")),
            solver]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=ray_cluster.runtime_env(),
             log_to_driver=False)
    yield
    ray.shutdown()


def bench(out, url: str, *extra: str):
    args = ["bench", "peers", *GRID, "--out", str(out), "--solver-url", f"sim@{url}",
            "--proposer-url", f"sim@{url}", "--json", *extra]
    return CliRunner().invoke(app, args)


def table(result) -> dict:
    """The figures of the last line, less wall time (the one thing that differs)."""
    systems = json.loads(result.output.strip().splitlines()[-1])["systems"]
    return {name: {k: v for k, v in s.items() if k != "wall_s"} for name, s in systems.items()}


def test_the_grid_on_ray_gives_the_serial_table_and_resumes(tmp_path, cluster):
    with SimServer(latency_s=0.0, rules=rules()) as url:
        serial = bench(tmp_path / "serial", url)
        assert serial.exit_code == 0, serial.output
        on_ray = bench(tmp_path / "ray", url, "--ray", "auto")
        assert on_ray.exit_code == 0, on_ray.output
        assert "ray: 2 run(s) sent, 0 read back" in on_ray.output
        assert table(on_ray) == table(serial)
        assert {s["runs"] for s in table(on_ray).values()} == {1}
        assert all(s["final_test"] == 1.0 for s in table(on_ray).values())
        # a lost run is run again, the others are read back exactly as the serial path does
        lost = tmp_path / "ray" / "runs" / "rg_basic_arithmetic" / "gepa" / "seed0"
        (lost / "result.json").unlink()
        again = bench(tmp_path / "ray", url, "--ray", "auto")
    assert again.exit_code == 0, again.output
    assert "ray: 1 run(s) sent, 1 read back" in again.output
    assert table(again) == table(serial)


def experiment_spec(url: str) -> ExperimentSpec:
    """A seed baseline and one adaptive run, Solver and Proposer the simulated models."""
    model = f"openai/sim@{url}?api_key=local"
    return ExperimentSpec(name="grid", track="reasoning", scale="smoke", seeds=[0], rounds=1,
                          candidates=1, feedback=2, selection=2, n_dev=4, n_test=2,
                          baselines=["seed"], solver=model, proposer=model, concurrency=2,
                          solver_max_tokens=64, proposer_max_tokens=256,
                          tasks=Tasks(test=["rg:basic_arithmetic"]))


def records(out) -> dict:
    """Each run's method, scores and costs, as the report reads them (wall time left out)."""
    found, unfinished = collect(out)
    assert not unfinished
    return {(r.method, r.meta["seed"]): (r.curve, r.spent, r.edits, r.valid_edits) for r in found}


def test_an_experiment_on_ray_gives_the_serial_records_and_resumes(tmp_path, cluster):
    logs: list[str] = []
    with SimServer(latency_s=0.0, rules=rules()) as url:
        spec = experiment_spec(url)
        asyncio.run(run_experiment(spec, tmp_path / "serial", log=lambda m: None))
        asyncio.run(run_experiment(spec, tmp_path / "ray", log=logs.append,
                                   run_plans=on_cluster("auto")))
        assert "ray: 2 run(s) sent, 0 read back" in logs
        serial = records(tmp_path / "serial")
        assert records(tmp_path / "ray") == serial
        assert serial[("untrained", 0)][0][-1][1] == 1.0  # the MARK-A edit was adopted
        logs.clear()
        asyncio.run(run_experiment(spec, tmp_path / "ray", log=logs.append,
                                   run_plans=on_cluster("auto")))
    assert "ray: 0 run(s) sent, 2 read back" in logs
    assert records(tmp_path / "ray") == serial


@pytest.mark.parametrize("command", [
    ["bench", "peers", *GRID, "--solver-url", "sim@http://127.0.0.1:9/v1", "--proposer-url",
     "sim@http://127.0.0.1:9/v1"],
    ["experiment", str(REASONING), "--smoke"]], ids=["bench_peers", "experiment"])
def test_a_cluster_that_does_not_answer_is_one_line_before_anything_is_written(
        tmp_path, capsys, monkeypatch, command):
    from harness_learning.cli.main import main

    monkeypatch.setattr(ray_cluster, "PROBE_S", 1.0)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # not the fixture's cluster
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--out", str(tmp_path / "o"), "--ray", "127.0.0.1:9"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 4 and len(err.splitlines()) == 1, err
    assert "the Ray cluster at 127.0.0.1:9 did not answer" in err and "· hint:" in err
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_a_missing_ray_names_the_extra(tmp_path, capsys, monkeypatch):
    from harness_learning.cli.main import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "peers", *GRID, "--out", str(tmp_path / "o"), "--solver-url",
              "sim@http://127.0.0.1:9/v1", "--proposer-url", "sim@http://127.0.0.1:9/v1",
              "--ray", "auto"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1, err
    assert "pip install 'harness-learning[ray]'" in err


def test_an_address_that_is_no_address_is_bad_input(tmp_path, capsys, monkeypatch):
    from harness_learning.cli.main import main

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "peers", *GRID, "--out", str(tmp_path / "o"), "--ray", "headnode"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and "want auto, HOST:PORT" in err, err


def test_the_job_carries_the_lab_to_workers_and_leaves_the_product_out():
    """The wheel holds no lab, so the runtime_env carries it as a py_module; the product's
    source stays out (the workers import the installed package)."""
    import harness_learning_lab

    env = ray_cluster.runtime_env()
    assert env["py_modules"] == [str(Path(harness_learning_lab.__file__).parent)]
    assert Path(env["working_dir"], "lab", "harness_learning_lab").is_dir()
    assert "/src" in env["excludes"]


def test_a_python_under_a_folder_with_spaces_is_given_to_ray_quoted(monkeypatch):
    """Ray execs a runtime_env's worker as `bash -c "exec PYTHON ..."` with the path as it is:
    from a clone under a folder with spaces no worker started until the path came quoted."""
    monkeypatch.setattr(sys, "executable", "/home/a user/hl/.venv/bin/python")
    assert ray_cluster.runtime_env()["py_executable"] == "'/home/a user/hl/.venv/bin/python'"
    monkeypatch.setattr(sys, "executable", "/home/user/hl/.venv/bin/python")
    assert "py_executable" not in ray_cluster.runtime_env()  # Ray's own default stays
