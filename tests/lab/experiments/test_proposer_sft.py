"""The Proposer-SFT experiment's plan and table (`experiments/proposer_sft.toml`): types drawn
from the measured task-type table and disjoint, every stage and arm on the focused prompt
(function edits, one report budget, run memory off), operators on only where the plan says,
and the table's paired gains and Fisher test computed from the runs it is given."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import cli, error_line

from harness_learning_lab.experiments.sft_run import arm_plans, collect_plans
from harness_learning_lab.experiments.sft_spec import load_sft_spec
from harness_learning_lab.experiments.sft_table import ArmRun, table

CONFIG = Path(__file__).resolve().parents[3] / "experiments" / "proposer_sft.toml"


def test_held_out_types_that_overlap_training_are_one_line_and_nothing_is_written(tmp_path):
    result = cli("experiment", CONFIG, "--out", tmp_path / "out", "--heldout-types",
                 "rg:gcd,chain_sum", timeout=120)
    assert result.returncode != 0
    assert "overlap the training types: rg:chain_sum" in error_line(result)
    assert not (tmp_path / "out").exists()


def test_types_must_have_the_class_their_role_needs(tmp_path):
    text = CONFIG.read_text().replace('control_types = ["rg:number_sorting"]',
                                      'control_types = ["rg:lcm"]', 1)
    bad = tmp_path / "experiments" / "bad.toml"
    bad.parent.mkdir()
    bad.write_text(f'task_types = "{CONFIG.parent / "task_types.toml"}"\n' + text)
    with pytest.raises(ValueError, match=r"control type\(s\) rg:lcm are not control types"):
        load_sft_spec(bad)


def test_every_run_is_on_the_focused_prompt_and_operators_only_where_planned(tmp_path):
    spec = load_sft_spec(CONFIG)
    collect = collect_plans(spec, tmp_path)
    assert len(collect) == len(spec.train_types) * len(spec.collect_seeds) * len(spec.shapes)
    assert {p.config.seed_harness for p in collect} == set(spec.shapes)
    assert {p.config.operators for p in collect} == {"interpreter"}
    arms = arm_plans(spec, tmp_path, {"base": "local:b.gguf", "student": "local:s.gguf"})
    assert {p.task for p in arms} == set(spec.heldout_types + spec.control_types)
    assert {p.config.operators for p in arms if p.method != "ceiling"} == {"none"}
    assert {p.config.proposer for p in arms if p.method == "student"} == {"local:s.gguf"}
    assert all(p.config.candidates == spec.edits for p in arms if p.method == "base")
    relay = [i for i, p in enumerate(arms) if p.method.endswith("_relay")]
    assert relay == list(range(len(arms) - len(relay), len(arms)))
    # one relay per Proposer arm and type (the first seed), not one per seed
    assert len(relay) == 2 * len(spec.test_types) and spec.relay_seeds == 1
    assert {arms[i].seed for i in relay} == {spec.seeds[0]}
    first_seed = [p.task for p in arms if p.seed == spec.seeds[0] and p.method == "seed"]
    assert first_seed == spec.test_types and arms[len(first_seed) * 4].seed == spec.seeds[1]
    for plan in [*collect, *arms]:
        assert (plan.config.edit_format, plan.config.memory_tokens, plan.config.report_chars,
                plan.config.block_menu) == ("function", 0, spec.report_chars, False)


def _run(arm, task, seed, valid, inline, scores):
    return ArmRun(arm, task, seed, edits=6, valid=valid, inline=inline, distinct=min(valid, 1),
                  scores={f"p{i}": s for i, s in enumerate(scores)})


def test_the_table_pairs_problems_and_tests_the_inline_share():
    runs = [_run("base", "rg:gcd", 0, 4, 0, [0, 0, 1, 0]),
            _run("student", "rg:gcd", 0, 5, 5, [1, 1, 1, 0]),
            _run("base", "rg:lcm", 0, 4, 0, [0, 1]),
            _run("student", "rg:lcm", 0, 3, 3, [1, 1]),
            _run("seed", "rg:number_sorting", 0, 0, 0, [1, 0]),
            _run("student", "rg:number_sorting", 0, 2, 0, [1, 1])]
    result = table(runs, ["rg:gcd", "rg:lcm"], ["rg:number_sorting"])
    student = result["arms"]["student"]["heldout"]
    assert (student["valid"], student["inline"], student["inline_share"]) == (8, 8, 1.0)
    assert student["distinct"] == 2  # one program per run: a collapsed student shows it
    assert student["vs_base"]["gain"] == pytest.approx(3 / 6, abs=1e-3)
    assert student["vs_base"]["n"] == 6 and student["vs_base"]["ci95"][0] > 0
    assert 0 < student["fisher_p_inline"] < 0.01  # 8 of 8 against 0 of 8
    control = result["arms"]["student"]["control"]
    assert control["vs_seed"]["gain"] == pytest.approx(0.5) and "vs_base" not in control


@pytest.mark.parametrize("changes", [{}, {"relay_seeds": 2}, {"relay_rounds": 0},
                                     {"relay_seeds": 5, "seeds": [0, 1, 2]}],
                         ids=["config", "relay-every-seed", "no-relay", "more-relay-seeds"])
def test_a_table_written_before_the_arms_end_says_how_many_runs_it_holds(tmp_path, changes):
    from dataclasses import replace

    from harness_learning_lab.experiments.sft_table import write_table

    spec = replace(load_sft_spec(CONFIG), **changes)
    planned = len(arm_plans(spec, tmp_path, {"base": "local:b.gguf", "student": "local:s.gguf"}))
    text = write_table(tmp_path, spec)["markdown"]
    assert text.splitlines()[0] == f"# {spec.name} (paper) (0 of {planned} runs finished)"
    assert (tmp_path / "sft_table.md").read_text() == text


def test_the_by_type_table_and_plot_show_each_arms_score_where_it_comes_from(tmp_path):
    from harness_learning_lab.experiments import sft_by_type
    from harness_learning_lab.experiments.sft_table import ARMS

    runs = [_run("seed", "rg:gcd", 0, 0, 0, [0, 1]), _run("seed", "rg:gcd", 1, 0, 0, [0, 0]),
            _run("student", "rg:gcd", 0, 6, 6, [1, 1]), _run("student", "rg:gcd", 1, 5, 5, [1, 0]),
            _run("base", "rg:number_sorting", 0, 2, 0, [0, 0])]
    for run in runs[:2]:
        run.edits = 0  # the seed arm proposes nothing
    types = sft_by_type.by_type(runs, ARMS)
    assert types["rg:gcd"]["seed"]["score"] == 0.25 and types["rg:gcd"]["student"] == {
        "score": 0.75, "seeds": [0, 1], "per_seed": {0: 1.0, 1: 0.5}, "valid": 11, "edits": 12,
        "distinct": 2}
    text = sft_by_type.markdown(types, ARMS, ["rg:number_sorting"])
    assert text.splitlines()[0] == "| type | seed | base | student |"
    assert "| rg:gcd | 0.250 [0.50 / 0.00] | - | 0.750 [1.00 / 0.50] (11/12, 2) |" in text
    assert "| rg:number_sorting (control) | - | 0.000 (2/6, 1) | - |" in text
    png = sft_by_type.plot(types, ARMS, tmp_path / "by_type.png", "a title")
    assert png.read_bytes()[:4] == b"\x89PNG"
