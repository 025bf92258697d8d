"""Teacher edits: `train sft --teacher` reads successful edits from any run, or a folder of runs
as `collect-edits --out` writes; the data summary says what each run gave and left out."""

import shutil

import pytest
from cli_run import cli, error_line
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.cli.collect_edits import run_dir_name, task_config
from harness_learning.training.data import FilterReport, LogError
from harness_learning.training.teacher import run_dirs_under, sft_dataset

runner = CliRunner()


def test_a_folder_of_runs_expands_and_anything_else_is_named(logged_run, tmp_path):
    folder = tmp_path / "teach"
    for name in ("b", "a"):
        shutil.copytree(logged_run, folder / name)
    (folder / "notes").mkdir()
    assert run_dirs_under([folder]) == [folder / "a", folder / "b"]
    assert run_dirs_under([logged_run]) == [logged_run]
    with pytest.raises(LogError, match="neither a run directory"):
        run_dirs_under([folder / "notes"])


def test_summary_counts_what_each_run_gave(logged_run):
    report = FilterReport()
    ds = sft_dataset([logged_run], report)
    (note,) = [n for n in report.notes if n.startswith(str(logged_run))]
    assert f"{report.proposals_read} proposals, " in note and "successful edits" in note
    assert "left out" in note and "invalid" in note
    assert report.proposals_kept == len(ds) > 0


def test_sft_from_teacher_runs_only(logged_run, tiny_dir, tmp_path):
    folder = tmp_path / "teach"
    shutil.copytree(logged_run, folder / "rg_basic_arithmetic")
    result = runner.invoke(app, [
        "train", "sft", "--teacher", str(folder), "--model", str(tiny_dir),
        "--out", str(tmp_path / "sft"), "--max-steps", "1", "--batch-size", "1", "--no-lora",
        "--max-length", "4096", "--no-save"])
    assert result.exit_code == 0, result.output
    assert f"data: {folder / 'rg_basic_arithmetic'}: " in result.output
    assert "metrics:" in result.output


def test_bad_teacher_path_and_no_logs_are_clear_errors(tmp_path):
    wide = {"COLUMNS": "400"}  # one line of rich's error box
    result = runner.invoke(app, ["train", "sft", "--teacher", str(tmp_path)], env=wide)
    assert result.exit_code != 0 and "neither a run directory" in result.output
    result = runner.invoke(app, ["train", "sft"], env=wide)
    assert result.exit_code != 0 and "--logs or --teacher" in result.output


def test_collect_config_is_one_round_of_n_scored_candidates(tmp_path):
    cfg = task_config("rg:leg_counting", tmp_path, "local", 4, selection=3)
    assert (cfg.rounds, cfg.candidates, cfg.policy, cfg.selection) == (1, 4, "strict", 3)
    assert cfg.run_dir == str(tmp_path / "rg_leg_counting") and run_dir_name("a/b c") == "a_b_c"
    with pytest.raises(ValueError, match="--per-task must be at least 1"):
        task_config("rg:leg_counting", tmp_path, "local", 0)


def test_collect_edits_refuses_empty_tasks(tmp_path):
    result = cli("collect-edits", "--proposer", "local", "--tasks", " , ", "--per-task", "2",
                 "--out", tmp_path)
    assert result.returncode == 2 and "--tasks is empty" in error_line(result)


def test_logs_with_nothing_to_learn_are_one_clear_line(logged_run, tmp_path):
    import dataclasses

    from harness_learning.harnesses.store import SQLiteLogStore

    flat = tmp_path / "flat"
    shutil.copytree(logged_run, flat)
    with SQLiteLogStore(flat) as store:  # every verdict rewritten with reward 0
        for p in list(store.iter_proposals()):
            store.put_proposal(dataclasses.replace(
                p, outcome=dataclasses.replace(p.outcome, reward=0.0) if p.outcome else None))
    result = cli("train", "grpo-offline", "--logs", flat, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert "no usable groups" in error_line(result) and "no reward spread" in error_line(result)
    assert "Traceback" not in result.stderr
    copies = [shutil.copytree(flat, tmp_path / f"flat{i}") for i in range(3)]
    result = cli("train", "grpo-offline", "--logs", *copies, "--out", tmp_path / "out")
    line = error_line(result)  # many runs are counted, so the reason still fits on the line
    assert result.returncode == 2 and "in 3 runs (" in line and "no reward spread" in line
