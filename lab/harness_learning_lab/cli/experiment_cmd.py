"""`harness-learn experiment CONFIG --out DIR [--smoke]` and `harness-learn experiment report DIR`:
a paper track as one command, and its tables rebuilt from the run logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import app
from harness_learning.cli._common import (
    console,
    print_json_last,
    run_async,
    user_errors,
)


def _rewrite_report(report_dir: Path | None) -> None:
    """`experiment report DIR`: the report of an experiment's finished runs, written again."""
    from harness_learning_lab.experiments.report import write_report

    if report_dir is None:
        raise typer.BadParameter("`experiment report` needs the output directory")
    if not (report_dir / "runs").is_dir():
        raise typer.BadParameter(f"{report_dir} holds no runs/ directory")
    if _sft_table(report_dir):
        return
    path = write_report(report_dir)
    typer.echo(path.read_text(encoding="utf-8"))  # plain: markdown is not rich markup
    console.print(f"report: {path}")


@app.command()
def experiment(
    target: Annotated[str, typer.Argument(
        help="An experiment config (experiments/*.toml), or `report` to rewrite DIR's report.")],
    report_dir: Annotated[Path | None, typer.Argument(
        help="With `report`: the experiment's output directory.", show_default=False)] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output directory.")] = None,
    smoke: Annotated[bool, typer.Option(help="The config's \\[smoke] scale (CPU, minutes).")] = False,
    trained_proposer: Annotated[str | None, typer.Option(
        help="Model string of a trained Proposer (overrides the config's).")] = None,
    solver: Annotated[str | None, typer.Option(help="Solver model (overrides the config's).")] = None,
    proposer: Annotated[str | None, typer.Option(
        help="Untrained Proposer model (overrides the config's).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON line: per arm of a "
                                          "trained-Proposer experiment, mean, ci95, valid_rate.")
                       ] = False,
    heldout_types: Annotated[str | None, typer.Option(
        "--heldout-types", help="A Proposer-SFT experiment (kind = \"proposer_sft\"): test on "
        "these types instead of the config's (rg:a,rg:b,...), with the same student: the "
        "training stages are reused, not rerun.", show_default=False)] = None,
    ray: Annotated[str | None, typer.Option(
        "--ray", help="Run each (task, method, seed) as a Ray task: auto (the cluster `ray "
        "start` made here) or HOST:PORT. Needs the ray extra; OUT must be seen by every node.",
        show_default=False)] = None,
) -> None:
    """Run every method of a track (baselines, untrained and trained Proposer, single-step
    against relay, repeated seeds) and write OUT/report.md; finished runs are reused."""
    from harness_learning_lab.experiments.report import write_report

    if target == "report":
        _rewrite_report(report_dir)
        return
    if out_dir is None:
        raise typer.BadParameter("--out DIR is required")
    from harness_learning_lab.experiments.config import load_spec
    from harness_learning_lab.experiments.runner import run_experiment
    from harness_learning_lab.experiments.sft_spec import is_sft_config

    with user_errors(f"check {target}'s keys (experiments/README.md describes them)"):
        sft = is_sft_config(target)
    if sft:
        _sft_experiment(target, out_dir, smoke, heldout_types, as_json)
        return
    if heldout_types is not None:
        raise typer.BadParameter("--heldout-types is for a Proposer-SFT experiment "
                                 "(experiments/proposer_sft.toml)")
    with user_errors(f"check {target}'s keys (experiments/README.md describes them)"):
        spec = load_spec(target, "smoke" if smoke else "paper")
        for key, value in {"trained_proposer": trained_proposer, "solver": solver,
                           "proposer": proposer}.items():
            if value is not None:
                setattr(spec, key, value)
        run_plans = None
        if ray is not None:  # attached first: a cluster that does not answer writes nothing
            from harness_learning_lab.experiments.on_ray import on_cluster

            run_plans = on_cluster(ray)
        run_async(run_experiment(spec, out_dir, log=console.print, stage_work=_stage_work(),
                                 run_plans=run_plans))
    path = write_report(out_dir)
    typer.echo(path.read_text(encoding="utf-8"))
    console.print(f"report: {path}")
    if as_json:
        _print_arms(out_dir)


def _sft_experiment(target: str, out_dir: Path, smoke: bool, heldout_types: str | None,
                    as_json: bool) -> None:
    """`experiments/proposer_sft.toml`: collect, demonstrations, SFT, export, arms
    (`experiments.sft_run`); each stage and run reused when done."""
    from harness_learning_lab.experiments.sft_run import run_sft_experiment
    from harness_learning_lab.experiments.sft_spec import load_sft_spec, parse_types

    with user_errors("training, held-out and control types come from experiments/"
                     "task_types.toml and must be disjoint"):
        heldout = parse_types(heldout_types) if heldout_types is not None else None
        spec = load_sft_spec(target, "smoke" if smoke else "paper", heldout)
        result = run_async(run_sft_experiment(spec, out_dir, log=console.print))
    typer.echo(result.pop("markdown"))
    console.print(f"table: {out_dir / 'sft_table.md'}")
    if as_json:
        print_json_last({arm: groups.get("heldout") for arm, groups in result["arms"].items()})


def _sft_table(out_dir: Path) -> bool:
    """Rewrite a Proposer-SFT experiment's table from its runs; False for another kind."""
    import json

    from harness_learning_lab.experiments.sft_spec import KIND, SFTExperimentSpec
    from harness_learning_lab.experiments.sft_table import write_table

    saved = out_dir / "experiment.json"
    data = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else {}
    if data.get("kind") != KIND:
        return False
    typer.echo(write_table(out_dir, SFTExperimentSpec(**data))["markdown"])
    console.print(f"table: {out_dir / 'sft_table.md'}")
    return True


def _stage_work():
    """The training stages' work (`proposer_stages`) for the lab's runner."""
    from harness_learning_lab.cli import proposer_stages as work
    from harness_learning_lab.experiments.stages import StageWork

    return StageWork(collect=work.collect_stage, sft=work.sft_stage, grpo=work.grpo_stage,
                     export=work.export_stage)


def _print_arms(out_dir: Path) -> None:
    import json

    from harness_learning_lab.experiments.arms import TABLE_JSON, last_line

    table = out_dir / TABLE_JSON
    result = json.loads(table.read_text(encoding="utf-8")) if table.is_file() else None
    print_json_last(last_line(result) if result else {})
