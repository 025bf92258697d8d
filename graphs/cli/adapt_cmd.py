"""`harness-learn adapt`, `resume` and `eval`: run, continue and judge an adaptation."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.cli import app
from harness_learning.graphs.cli._common import (
    console,
    out,
    print_json_last,
    run_async,
    user_errors,
)
from harness_learning.graphs.cli.options import field_parameters, field_values
from harness_learning.graphs.cli.show_cmd import STORE_HELP


def check_inputs(config) -> Any:
    """Open the run's task and tools now, so a missing file or a failing import is one clear
    line before any work starts; returns the task (opened once: the run uses it)."""
    from harness_learning.graphs.adapter.inputs import open_task, open_tools

    task = open_task(config)
    open_tools(config)
    return task


def adapt(**options: Any) -> None:
    """Adapt a harness to TASK: evaluate, report, propose, validate, select, repeat."""
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.graphs.cli.models_cmd import require_local_models
    from harness_learning.harnesses.llm.models import resolve_role

    as_json = options.pop("as_json")
    try:
        config = AdaptConfig(**field_values(AdaptConfig, options))
    except (TypeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    require_local_models(config.solver, resolve_role(config.proposer, "proposer"))
    with user_errors():
        config = prepare(config)
    _run(config, resume=False, as_json=as_json)


def _register_adapt() -> None:
    """`adapt`'s options are AdaptConfig's fields (graphs.cli.options), plus `--json`."""
    params = [*field_parameters(AdaptConfig), inspect.Parameter(
        "as_json", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
        default=typer.Option(False, "--json", help="End with a JSON summary line."))]
    adapt.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    adapt.__annotations__ = {p.name: p.annotation for p in params}
    app.command()(adapt)


_register_adapt()


@app.command()
def resume(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
    store: Annotated[str, typer.Option(help=STORE_HELP)] = "",
) -> None:
    """Continue a run that was stopped or killed; nothing finished is redone."""
    from harness_learning.graphs.adapter.run import load_config

    with user_errors():
        config = load_config(run_dir)
        if store:  # for this process only: config.json keeps the store the run was started on
            config = dataclasses.replace(config, store=store)
    _run(config, resume=True, as_json=as_json)


def _run(config, *, resume: bool, as_json: bool) -> dict:
    """Check the inputs, run with the live view; returns the final state."""
    from harness_learning.graphs.cli.steer_cmd import drive

    with user_errors():
        task = check_inputs(config)
    return drive(config, resume=resume, as_json=as_json, task=task)


@app.command("eval")
def eval_run(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    split: Annotated[str, typer.Option(help="Only `test` is meaningful: held-out problems.")] = "test",
    n: Annotated[int, typer.Option(help="Test problems (0 = all).")] = 0,
    solver: Annotated[str, typer.Option(help="Test with this Solver instead of the run's, "
                                        "e.g. local:OUT.gguf from `train solver-sft` and "
                                        "`train export` (its results are kept apart).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
    store: Annotated[str, typer.Option(help=STORE_HELP)] = "",
) -> None:
    """Evaluate the seed and each round's selected version on held-out test problems."""
    from harness_learning.graphs.adapter.final_eval import final_evaluation
    from harness_learning.graphs.adapter.nodes import InfraStop
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.graphs.cli.errors import unreachable

    if split != "test":
        raise typer.BadParameter("the final evaluation is on the held-out test split")
    if solver:
        from harness_learning.graphs.cli.models_cmd import require_local_models

        require_local_models(solver)
    with user_errors():
        config = load_config(run_dir)
        task = check_inputs(config)
    try:
        summary = run_async(final_evaluation(run_dir, n=n, console=console, task=task,
                                             solver=solver, store=store))
    except InfraStop as exc:  # name the endpoint that failed
        raise unreachable(solver or config.solver, "solver", str(exc), "--solver") from exc
    out.print(summary.table())
    out.print(f"plot: {summary.plot_path}\ndiffs: {summary.diffs_path}")
    if as_json:
        print_json_last(summary.to_json())
