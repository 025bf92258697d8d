"""A tiny experiment end to end with scripted Solver and Proposer (harness code runs in real
sandbox workers): the report is rebuilt from the logs alone with identical tables, a finished
experiment reruns nothing, and the single-step count follows the scripted edits."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning_lab.experiments.collect import collect
from harness_learning_lab.experiments.config import ExperimentSpec, Tasks
from harness_learning_lab.experiments.report import CURVES, REPORT, write_report
from harness_learning_lab.experiments.runner import run_experiment

LINE = 'PROMPT = """Solve the problem{}. Think briefly, then give the final answer on the last line'
BETTER = f"<<<<<<< SEARCH\n{LINE.format('')}\n=======\n{LINE.format(' CAREFULLY')}\n>>>>>>> REPLACE\n"


def proposer_rule(prompt, params):
    # Even sample seeds get the better edit, odd ones a non-edit (invalid).
    return BETTER if params["seed"] % 2 == 0 else "Looks fine."


SPEC = ExperimentSpec(name="tiny", track="reasoning", seeds=[0, 1], rounds=2, candidates=1,
                      compare_candidates=2, feedback=4, selection=4, concurrency=4,
                      tasks=Tasks(test=["sums"], hard=["sums"]))


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp")
    proposers: list[ScriptedModel] = []

    def make_context(config):
        proposer = ScriptedModel(proposer_rule)
        proposers.append(proposer)
        return AdapterContext.from_config(config, task=SumTask(4, test_offset=2),
                                          solver=ScriptedModel(solver_rule), proposer=proposer)

    def run():
        proposers.clear()
        asyncio.run(run_experiment(SPEC, out, make_context, task_options=lambda t: {},
                                   log=lambda m: None))
        return sum(len(p.calls) for p in proposers)

    first_calls = run()
    return out, first_calls, run


def test_report_is_rebuilt_identically_from_the_logs(experiment):
    out, _, _ = experiment
    first = write_report(out).read_text()
    (out / REPORT).unlink()
    (out / CURVES).unlink()
    again = write_report(out).read_text()
    assert again == first
    assert (out / CURVES).stat().st_size > 0
    assert "seed harness (no adaptation)" in first and "fixed tool loop" in first
    assert "not trained" in first and "ORACLE" in first


def test_single_step_counts_edits_that_beat_the_seed(experiment):
    out, _, _ = experiment
    text = write_report(out).read_text()
    # single-step sample seeds: seed 0 -> 1009, 1010; seed 1 -> 101012, 101013: one better each.
    row = next(line for line in text.splitlines() if line.startswith("| single-step: 1 round x 2"))
    assert "2/4 = 50%" in row and "| 2/4 |" in row


def test_scores_follow_the_scripted_solver(experiment):
    out, _, _ = experiment
    records, unfinished = collect(out)
    assert not unfinished
    by = {(r.method, r.meta["seed"]): r for r in records}
    # the seed gets odd first terms wrong: t0..t3 -> 2 of 4 right; CAREFULLY gets all right.
    assert by["seed", 0].final == pytest.approx(0.5)
    assert by["single_step", 0].final == pytest.approx(1.0)
    assert by["single_step", 0].oracle == pytest.approx(1.0)
    assert {m for m, _ in by} == {"seed", "tool_loop", "untrained", "single_step"}


def test_a_finished_experiment_reruns_nothing(experiment):
    _, first_calls, run = experiment
    assert first_calls > 0
    assert run() == 0


def test_a_trained_proposer_gets_its_own_row(tmp_path):
    """With `trained_proposer` set, its runs are planned, run and reported beside the others."""
    spec = ExperimentSpec(name="tiny", track="reasoning", seeds=[0], rounds=1, candidates=1,
                          compare_candidates=1, feedback=4, selection=4, concurrency=4,
                          trained_proposer="scripted/trained", baselines=[],
                          tasks=Tasks(test=["sums"], hard=[]))
    asked: list[str] = []

    def make_context(config):
        asked.append(config.proposer)
        trained = config.proposer == "scripted/trained"  # the trained one always finds the fix
        proposer = ScriptedModel((lambda p, q: BETTER) if trained else (lambda p, q: "Looks fine."))
        return AdapterContext.from_config(config, task=SumTask(4, test_offset=2),
                                          solver=ScriptedModel(solver_rule), proposer=proposer)

    asyncio.run(run_experiment(spec, tmp_path, make_context, task_options=lambda t: {},
                               log=lambda m: None))
    assert "scripted/trained" in asked
    records, unfinished = collect(tmp_path)
    by = {r.method: r for r in records}
    assert not unfinished and by["trained"].final == pytest.approx(1.0)
    assert by["untrained"].final == pytest.approx(0.5)
    text = write_report(tmp_path).read_text()
    row = next(line for line in text.splitlines() if line.startswith("| trained Proposer `"))
    assert "scripted/trained" in row and "1.000" in row and "not trained" not in text
