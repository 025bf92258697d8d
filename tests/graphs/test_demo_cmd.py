"""The README's main job, `harness-learn demo`, and `eval` on its run, with real local models:
operator candidates apply blocks, and SmolLM2-135M both solves and proposes here, the fast pair
for a test of the flow (the demo's own models, Qwen2.5-Coder-1.5B in both roles, are what the
gains in the README were measured with; a Qwen Proposer's whole run is tested in
test_your_own_agent's Python API test)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app

# The demo's module fixture runs a whole adaptation inside its first test's time.
pytestmark = pytest.mark.timeout(1200)
# Held-out problems per tested version: what the tests check (one row per problem and version,
# the estimate's bound, the summary's scores) holds at any size; the adopted operators make
# SmolLM2 ramble to its token limit on each problem, so each one costs seconds.
TEST = 4


def test_demo_without_the_proposer_model_names_the_fetch_command(tmp_path, monkeypatch, capsys):
    from harness_learning.cli.errors import EXIT_USAGE
    from harness_learning.cli.main import main

    monkeypatch.setenv("HARNESS_LEARNING_MODELS", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--run-dir", str(tmp_path / "demo")])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == EXIT_USAGE and line.startswith("harness-learn: error: ")
    assert "run `harness-learn models fetch qwen2.5-coder-1.5b` once" in line
    assert not (tmp_path / "demo").exists()


@pytest.fixture(scope="module")
def demo_run(local_model_url, tmp_path_factory):
    """The README's main job, run once for this module: (run directory, its output).

    Run as a user runs it, without the session's shared server in the environment: the
    Proposer gets a server of its own (`AdapterContext.proposer`), so its replies overlap the
    Solver's selection calls and a repair turn reuses its cached prompt, instead of queueing
    behind the Solver on one server (which made the Proposer about half of this run's time)."""
    from harness_learning.harnesses.llm import LOCAL_URL_ENV, clear_clients, local

    run_dir = tmp_path_factory.mktemp("demo") / "demo"
    clear_clients()  # no client resolved against the shared server is reused
    # the Proposer's server (and any other the demo starts) stops at the end
    with local.servers_started_inside(), pytest.MonkeyPatch.context() as env:
        env.delenv(LOCAL_URL_ENV)
        # one-digit products: SmolLM2 solves about a third, so the run has trajectories to
        # train on; 4 held-out problems, not the README's 24 (TEST)
        result = CliRunner().invoke(app, ["demo", "--run-dir", str(run_dir), "--solver",
                                          "local:smollm2-135m", "--proposer",
                                          "local:smollm2-135m", "--task-config",
                                          '{"max_digits": 1}', "--test", str(TEST), "--json"])
    clear_clients()  # later calls go to the shared server again, not to the demo's own
    return run_dir, result


@pytest.mark.slow
def test_demo_adapts_tests_and_eval_rereads_the_run(demo_run):
    run_dir, result = demo_run
    assert result.exit_code == 0, result.output
    assert "held-out: seed" in result.output and "held-out answers of version" in result.output
    assert "adopted diff:" in result.output and "outcome" in result.output
    last = json.loads(result.output.strip().splitlines()[-1])
    assert set(last) >= {"adopted", "adopted_from", "seed_test", "final_test", "rounds", "wall_s"}
    assert last["rounds"] == 2 and 0 <= last["adopted"] <= 2 and last["wall_s"] > 0
    assert len(last["adopted_from"]) == last["adopted"]
    assert all(o == "proposer" or o.startswith("operator:") for o in last["adopted_from"])
    assert "operator:interpreter" in result.output  # round 1's operator candidate is shown
    assert 0.0 <= last["seed_test"] <= 1.0 and 0.0 <= last["final_test"] <= 1.0
    assert (run_dir / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "adopted.diff").exists() and (run_dir / "config.json").exists()

    again = CliRunner().invoke(app, ["eval", str(run_dir), "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output.strip().splitlines()[-1])
    assert summary["rounds"] == 2 and [r["round"] for r in summary["per_round"]] == [0, 1, 2]
    assert all(0.0 <= r["test"] <= 1.0 for r in summary["per_round"])
    with sqlite3.connect(run_dir / "log.sqlite") as db:
        tested = db.execute("SELECT sha, count(*) FROM evaluations WHERE purpose = 'test' "
                            "GROUP BY sha").fetchall()
    assert sorted(n for _, n in tested) == [TEST] * len({r["sha"] for r in summary["per_round"]})
    bad = CliRunner().invoke(app, ["eval", str(run_dir), "--split", "feedback"])
    assert bad.exit_code == 2 and "held-out test split" in bad.output


@pytest.mark.slow
def test_the_demos_estimate_bounds_what_it_spent(demo_run):
    """The estimate the demo prints, its held-out test of the seed and the final version
    included, is an upper bound within a factor of 3 of what the demo spent (a later `eval`
    in this module tests more versions: those calls are left out)."""
    from harness_learning.graphs.adapter.estimate import estimate_budget
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.harnesses.store import SQLiteLogStore
    from harness_learning.harnesses.store.spend import is_solver_call

    run_dir, result = demo_run
    assert result.exit_code == 0, result.output
    estimate = estimate_budget(load_config(run_dir), test_problems=TEST)
    printed = " ".join(result.output.split())
    assert f"at most ~{estimate.solver_calls:,} Solver calls, {estimate.proposer_calls} " \
           "Proposer calls" in printed and f"then {TEST} held-out test problems" in printed
    with SQLiteLogStore(run_dir) as store:
        lineage = store.lineage()
        ends = {lineage[0].sha, lineage[-1].sha}  # the seed and the final version
        solver = sum(is_solver_call(call) for ev in store.iter_evaluations()
                     if not ev.purpose.startswith("test") or (ev.purpose == "test"
                                                              and ev.sha in ends)
                     for call in ev.result.calls)
        proposer = store.spent()["proposer_calls"]
    assert estimate.solver_calls / 3 <= solver <= estimate.solver_calls, (estimate, solver)
    assert estimate.proposer_calls / 3 <= proposer <= estimate.proposer_calls, (estimate, proposer)


@pytest.mark.slow
def test_round_twos_real_proposer_was_shown_round_ones_candidates(demo_run):
    """The run memory on a real run: round 2's logged prompt (what the real Proposer read)
    lists round 1's operator candidate, and `show` prints that history."""
    from harness_learning.graphs.adapter.run_memory import shown_memory
    from harness_learning.harnesses.store import SQLiteLogStore

    run_dir, result = demo_run
    assert result.exit_code == 0, result.output
    with SQLiteLogStore(run_dir) as store:
        asked = next(p for p in store.iter_proposals(round=2) if p.origin == "proposer")
    memory = shown_memory(asked.prompt)
    assert any(line.startswith("r1 c2 operator:interpreter: block interpreter -> ")
               for line in memory), memory
    shown = CliRunner().invoke(app, ["show", str(run_dir)])
    assert shown.exit_code == 0 and "round 2: the Proposer was shown" in shown.output
    assert memory[0][:50] in shown.output  # (rich wraps long lines at its width)


@pytest.fixture
def one_torch_thread():
    """One intra-op thread while SmolLM2 trains in this process, as in tests/training: two
    threads on a shared 2-core machine spin against each other (the two LoRA steps took 253 s
    with two threads under load, 47 s with one)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_the_solver_fine_tuned_on_the_runs_trajectories_is_tested_with_its_harness(demo_run, tmp_path):
    """`train solver-sft` on the demo's log (SmolLM2 itself, two LoRA steps), `train export`,
    then `eval --solver local:THAT.gguf`: the pair's held-out scores, kept apart from the run's."""
    run_dir, demo = demo_run
    assert demo.exit_code == 0, demo.output
    out = tmp_path / "solver"
    trained = CliRunner().invoke(app, ["train", "solver-sft", "--logs", str(run_dir), "--out",
                                       str(out), "--version", "lineage", "--max-steps", "2",
                                       "--batch-size", "2"])
    assert trained.exit_code == 0, trained.output
    data = json.loads(trained.output.split("data: ", 1)[1].splitlines()[0])
    assert data["calls_kept"] >= 1 and data["problems_solved"] <= data["problems_read"]
    gguf = tmp_path / "solver.gguf"
    exported = CliRunner().invoke(app, ["train", "export", str(out / "checkpoint"), "--out", str(gguf)])
    assert exported.exit_code == 0 and gguf.stat().st_size > 50e6, exported.output
    tested = CliRunner().invoke(app, ["eval", str(run_dir), "--solver", f"local:{gguf}", "--n",
                                      "4", "--json"])
    assert tested.exit_code == 0, tested.output
    summary = json.loads(tested.output.strip().splitlines()[-1])
    assert [r["round"] for r in summary["per_round"]] == [0, 1, 2]
    assert all(0.0 <= r["test"] <= 1.0 for r in summary["per_round"])
    with sqlite3.connect(run_dir / "log.sqlite") as db:
        purposes = dict(db.execute("SELECT purpose, count(*) FROM evaluations "
                                   "WHERE purpose LIKE 'test%' GROUP BY purpose").fetchall())
    versions = len({r["sha"] for r in summary["per_round"]})
    assert purposes[f"test@local:{gguf}"] == 4 * versions  # its own rows, beside the run's
    assert "test" in purposes
    assert (run_dir / "scores-solver.png").read_bytes()[:4] == b"\x89PNG"
