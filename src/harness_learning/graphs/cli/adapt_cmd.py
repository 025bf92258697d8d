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
    SANDBOX_HELP,
    check_sandbox,
    choose_sandbox,
    console,
    out,
    print_json_last,
    run_async,
    user_errors,
)
from harness_learning.graphs.cli.options import field_parameters, field_values, given_options
from harness_learning.graphs.cli.show_cmd import StoreOption


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
    from harness_learning.harnesses.store.pgurl import give as give_store

    as_json, sandbox = options.pop("as_json"), options.pop("sandbox")
    config = _config_of(options.pop("ctx"), options.pop("config_file"), options)
    give_store(config.store)  # typed or in the user's settings file: the user's own word
    require_local_models(config.solver, resolve_role(config.proposer, "proposer"))
    check_sandbox(sandbox)  # before `prepare` writes the run directory
    with user_errors():
        config = prepare(config)
    _run(config, resume=False, as_json=as_json)


def _config_of(ctx: typer.Context, config_file: Path | None, options: dict[str, Any]) -> AdaptConfig:
    """The run's config: the fields' defaults, under the settings file's values, under the
    flags typed on the command line. Nothing is written before it is whole and checked."""
    from harness_learning.graphs.adapter.config_file import (
        ConfigFileError,
        over_file,
        read_config_file,
    )
    from harness_learning.graphs.cli.errors import EXIT_USAGE, CliError

    typed = {name: options[name] for name in given_options(ctx, options)}
    try:
        values = field_values(AdaptConfig, options)
        if config_file is not None:
            values = over_file(values, read_config_file(config_file), typed)
        for name in ("task", "run_dir"):
            if values.get(name) is None:
                flag = "--" + name.replace("_", "-")
                raise CliError(f"Missing option '{flag}' (or the key {name!r} of a --config "
                               "file)", "see `harness-learn adapt --help`", EXIT_USAGE)
        return AdaptConfig(**values)
    except ConfigFileError as exc:
        raise CliError(str(exc), exc.hint, EXIT_USAGE) from exc
    except (TypeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from exc


CONFIG_HELP = ("Settings file (TOML) whose keys are the fields behind these flags: task, "
               "run_dir, rounds, seed_harness, task_options = {n_dev = 40}, budget = "
               "{solver_calls = 500}, ... Defaults < the file < the flags typed here.")


def _register_adapt() -> None:
    """`adapt`'s options are AdaptConfig's fields (graphs.cli.options), plus `--config` and
    `--json`; the click context tells which flags were typed (they override the file)."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("ctx", keyword, annotation=typer.Context),
        *field_parameters(AdaptConfig, required=False),
        inspect.Parameter("config_file", keyword, annotation=Path | None,
                          default=typer.Option(None, "--config", help=CONFIG_HELP)),
        inspect.Parameter("as_json", keyword, annotation=bool,
                          default=typer.Option(False, "--json", help="End with a JSON summary line.")),
        inspect.Parameter("sandbox", keyword, annotation=str,
                          default=typer.Option("", "--sandbox", help=SANDBOX_HELP))]
    adapt.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    adapt.__annotations__ = {p.name: p.annotation for p in params}
    app.command()(adapt)


_register_adapt()


@app.command()
def resume(
    run_dir: Annotated[Path | None, typer.Argument(
        help="A run directory written by `adapt` (default: the --config file's run_dir).")] = None,
    config_file: Annotated[Path | None, typer.Option(
        "--config", help="The settings file the run was started with: its run_dir is the run to "
                         "continue, and a setting it holds otherwise than the run is refused "
                         "(a run keeps its settings).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
    store: StoreOption = "",
) -> None:
    """Continue a run that was stopped or killed; nothing finished is redone."""
    from harness_learning.graphs.adapter.run import load_config

    values = _read_settings(config_file) if config_file is not None else {}
    with user_errors():
        config = load_config(_run_dir_of(run_dir, values, config_file))
    if values:
        _check_agrees(values, config, config_file)
    if store:  # for this process only: config.json keeps the store the run was started on
        config = dataclasses.replace(config, store=store)
    _run(config, resume=True, as_json=as_json)


def _read_settings(config_file: Path) -> dict[str, Any]:
    """A settings file's values; a bad one is the command line's one error line (exit 2)."""
    from harness_learning.graphs.adapter.config_file import ConfigFileError, read_config_file
    from harness_learning.graphs.cli.errors import EXIT_USAGE, CliError

    try:
        return read_config_file(config_file)
    except ConfigFileError as exc:
        raise CliError(str(exc), exc.hint, EXIT_USAGE) from exc


def _run_dir_of(run_dir: Path | None, values: dict[str, Any], config_file: Path | None) -> Path:
    from harness_learning.graphs.cli.errors import EXIT_USAGE, CliError

    if run_dir is not None:
        return run_dir
    if values.get("run_dir"):
        return Path(values["run_dir"])
    where = f"{config_file} has no run_dir" if config_file else "no run directory given"
    raise CliError(where, "give the run directory: `harness-learn resume RUN_DIR`", EXIT_USAGE)


def _check_agrees(values: dict[str, Any], config: AdaptConfig, config_file: Path | None) -> None:
    """A settings file edited since the run started is refused, not silently ignored."""
    from harness_learning.graphs.adapter.config_file import disagreements
    from harness_learning.graphs.cli.errors import EXIT_USAGE, CliError

    with user_errors():
        clash = disagreements(values, config)
    if clash:
        raise CliError(f"{config_file}: the run in {config.run_dir} has other settings: "
                       f"{'; '.join(clash)}", f"a run keeps its settings: `harness-learn resume "
                       f"{config.run_dir}` continues it as it is; a new run_dir starts another",
                       EXIT_USAGE)


def _run(config, *, resume: bool, as_json: bool) -> dict:
    """Check the inputs, say which sandbox backend runs the harness, run with the live view;
    returns the final state."""
    from harness_learning.graphs.cli.steer_cmd import drive

    with user_errors():
        task = check_inputs(config)
    choose_sandbox("")  # as --sandbox or HARNESS_SANDBOX set it
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
    store: StoreOption = "",
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
