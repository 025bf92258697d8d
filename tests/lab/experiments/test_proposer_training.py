"""The trained-Proposer experiment: its config, its plan of arm runs, resumable stages, and the
table's arithmetic (means, 95% intervals, valid and zero-score rates, the oracle)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from harness_learning.evals.registry import get_task
from harness_learning_lab.experiments.arms import ArmRun, ci95, summarise, targets
from harness_learning_lab.experiments.config import load_spec
from harness_learning_lab.experiments.runner import plan_runs, task_options_for
from harness_learning_lab.experiments.stages import finish_stage, stage_done

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
CHECKED_IN = ["proposer_training", "proposer_training_reduced"]


@pytest.mark.parametrize("name", CHECKED_IN)
def test_checked_in_configs_keep_training_and_held_out_types_apart(name):
    spec = load_spec(EXPERIMENTS / f"{name}.toml")
    train = spec.training_spec()
    assert spec.tasks.train and spec.tasks.test
    assert not set(spec.tasks.train) & set(spec.tasks.test)
    assert (train.group_size, train.eval_candidates, train.oracle_of) == (8, 8, "sft_rl")
    assert train.teacher == "local:qwen2.5-coder-1.5b" and len(spec.seeds) >= 3
    assert set(spec.task_configs) <= {*spec.tasks.train, *spec.tasks.test}


@pytest.mark.parametrize("name", CHECKED_IN)
def test_checked_in_configs_can_draw_their_dev_and_test_problems(name, tmp_path):
    # A generator setting with too few distinct questions (count_bits up to 4 has 4) fails
    # only when its first run starts, after the hour of collect, SFT and GRPO before it.
    spec = load_spec(EXPERIMENTS / f"{name}.toml")
    options = task_options_for(spec, tmp_path, print)
    for task in [*spec.tasks.train, *spec.tasks.test]:
        built = get_task(task, **options(task))
        dev, test = built.dev(), built.test()
        assert (len(dev), len(test)) == (spec.n_dev, spec.n_test), task
        assert not {p.question for p in dev} & {p.question for p in test}, task


def test_smoke_scale_is_tiny():
    spec = load_spec(EXPERIMENTS / "proposer_training.toml", "smoke")
    train = spec.training_spec()
    assert spec.seeds == [0] and len(spec.tasks.test) == len(spec.tasks.train) == 1
    assert (train.grpo_steps, train.group_size, train.eval_candidates) == (1, 2, 2)


def test_bad_training_tables_fail_naming_the_problem(tmp_path):
    bad = tmp_path / "bad.toml"
    head = 'name = "x"\ntrack = "reasoning"\n'
    bad.write_text(head + '[tasks]\ntrain = ["rg:gcd"]\ntest = ["rg:gcd"]\n[training]\n')
    load_spec(bad)  # an empty [training] table is no training
    bad.write_text(head + '[tasks]\ntrain = ["rg:gcd"]\ntest = ["rg:gcd"]\n'
                   '[training]\nper_task = 2\n')
    with pytest.raises(ValueError, match=r"disjoint.*rg:gcd"):
        load_spec(bad)
    bad.write_text(head + '[tasks]\ntrain = ["rg:lcm"]\ntest = ["rg:gcd"]\n'
                   '[training]\ngroup_sise = 8\n')
    with pytest.raises(ValueError, match=r"bad\.toml.*group_sise"):
        load_spec(bad)


def test_plan_gives_each_arm_its_candidates_on_every_held_out_type_and_seed(tmp_path):
    spec = load_spec(EXPERIMENTS / "proposer_training.toml")
    arms = {"base": "local:/m/base.gguf", "sft_rl": "local:/m/sft_rl.gguf",
            "teacher": spec.training_spec().teacher}
    plans = plan_runs(spec, tmp_path, lambda task: {}, arms)
    by = {(p.method, p.task, p.seed): p for p in plans}
    assert {p.method for p in plans} == {"seed", "tool_loop", *arms}
    for arm, model in arms.items():
        for task in spec.tasks.test:
            for seed in spec.seeds:
                plan = by[arm, task, seed]
                assert plan.test_all and plan.config.rounds == 1
                assert plan.config.proposer == model
    train = spec.training_spec()
    assert by["base", "rg:products", 1].config.candidates == train.eval_candidates
    assert by["teacher", "rg:products", 1].config.candidates == train.teacher_candidates
    assert by["teacher", "rg:products", 1].config.proposer_params["max_tokens"] == 512
    assert not any(p.task in spec.tasks.train for p in plans)


def test_a_finished_stage_is_reused_and_other_parameters_refused(tmp_path):
    folder = tmp_path / "sft"
    assert stage_done(folder, {"lr": 1}) is None
    finish_stage(folder, {"lr": 1}, {"checkpoint": "c"}, 1.0)
    assert stage_done(folder, {"lr": 1}) == {"checkpoint": "c"}
    with pytest.raises(ValueError, match="other parameters"):
        stage_done(folder, {"lr": 2})


def test_ci95_is_the_t_interval():
    values = [0.2, 0.4, 0.9]
    half = 4.303 * statistics.stdev(values) / math.sqrt(3)  # t(0.975, 2) to 3 decimals
    assert ci95(values) == pytest.approx(half, rel=1e-4)
    assert ci95([0.5]) is None


def test_table_means_rates_and_oracle():
    tasks = ["a", "b"]
    runs = [ArmRun("seed", "a", 0, [0.5], 0, 0), ArmRun("seed", "b", 0, [0.25], 0, 0)]
    cands = {(0, "a"): [1.0, 0.0], (0, "b"): [0.5, 0.5], (1, "a"): [0.0, 0.0],
             (1, "b"): [1.0, 0.5]}
    for (seed, task), scores in cands.items():
        runs.append(ArmRun("sft_rl", task, seed, scores, sum(s > 0 for s in scores), 2))
        runs.append(ArmRun("oracle", task, seed, [max(scores)], 0, 2))
    runs.append(ArmRun("base", "a", 0, [0.0, 0.0], 0, 2))
    runs.append(ArmRun("base", "b", 0, [0.0, 0.0], 0, 2))
    table = summarise(runs, tasks)
    per_seed = [(0.5 + 0.5) / 2, (0.0 + 0.75) / 2]
    assert table["sft_rl"]["mean"] == pytest.approx(statistics.fmean(per_seed))
    assert table["sft_rl"]["ci95"] == pytest.approx(ci95(per_seed))
    assert table["sft_rl"]["per_type"]["a"]["mean"] == pytest.approx(0.25)
    assert table["sft_rl"]["valid_rate"] == pytest.approx(5 / 8)
    assert table["sft_rl"]["zero_rate"] == pytest.approx(3 / 8)
    assert table["oracle"]["mean"] == pytest.approx(statistics.fmean([0.75, 0.5]))
    assert table["seed"]["mean"] == pytest.approx(0.375) and table["seed"]["ci95"] is None
    assert list(table) == ["seed", "base", "sft_rl", "oracle"]  # the arms' order
    goals = targets(table)
    assert goals["valid_rate_3x_base"]["holds"] and goals["mean_at_least_base"]["holds"]
    assert "beats_teacher" not in goals


def test_a_training_experiment_needs_the_stage_work_the_cli_supplies(tmp_path):
    import asyncio

    from harness_learning_lab.experiments.runner import run_experiment

    spec = load_spec(EXPERIMENTS / "proposer_training.toml", "smoke")
    with pytest.raises(ValueError, match="harness-learn experiment"):
        asyncio.run(run_experiment(spec, tmp_path, task_options=lambda t: {}, log=lambda m: None))
    assert not (tmp_path / "stages").exists()
