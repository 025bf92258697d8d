"""`harness-learn adapt`, `resume` and `eval`: run, continue and judge an adaptation."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel

from harness_learning.cli import app
from harness_learning.cli._common import (
    SANDBOX_HELP,
    check_sandbox,
    choose_sandbox,
    console,
    out,
    print_json_last,
    run_async,
    user_errors,
)
from harness_learning.cli.options import field_parameters, field_values, given_options
from harness_learning.cli.show_cmd import StoreOption
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.sealed_inputs import TRUST_HELP
from harness_learning.graphs.adapter.setting_kinds import parts_of

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.prepared import PreparedRun


def check_inputs(run: PreparedRun, trust: bool = False) -> PreparedRun:
    """Open the run's task and tools now, so a missing file or a failing import is one clear
    line before any work starts; returns the run with them (each opened once: the run uses
    them). Code kept in the run directory is imported only when this user sealed it, or
    `trust` says so (`adapter.sealed_inputs`): a handed run directory's metric.py never runs
    here unasked."""
    from harness_learning.graphs.adapter.inputs import inputs_dir
    from harness_learning.graphs.adapter.sealed_inputs import check_sealed

    check_sealed(inputs_dir(run.config), trust)
    return run.opened()


def adapt(**options: Any) -> None:
    """Adapt a harness to TASK: evaluate, report, propose, validate, select, repeat."""
    from harness_learning.cli.models_cmd import require_local_models
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.harnesses.experience import give_location
    from harness_learning.harnesses.llm.models import resolve_role
    from harness_learning.harnesses.store.pgurl import give as give_store

    as_json, sandbox = options.pop("as_json"), options.pop("sandbox")
    config = _config_of(options.pop("ctx"), options.pop("config_file"), options)
    give_store(config.store)  # typed or in the user's settings file: the user's own word
    give_location(config.experience)  # the same for a postgresql:// experience library
    require_local_models(config.solver, resolve_role(config.proposer, "proposer"))
    check_sandbox(sandbox)  # before `prepare` writes the run directory
    with user_errors():
        run = prepare(config)
    _run(run, resume=False, as_json=as_json)


def _config_of(ctx: typer.Context, config_file: Path | None, options: dict[str, Any]) -> AdaptConfig:
    """The run's config: the fields' defaults, under the settings file's values, under the
    flags typed on the command line. Nothing is written before it is whole and checked."""
    from pydantic import ValidationError

    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.graphs.adapter.config_file import (
        ConfigFileError,
        over_file,
        read_config_file,
        setting_error,
    )

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
        try:
            return AdaptConfig(**values)
        except ValidationError as exc:  # a typed flag's value (a file's was checked)
            raise setting_error(exc, style="flag") from None
    except ConfigFileError as exc:
        raise CliError(str(exc), exc.hint, EXIT_USAGE) from exc
    except (TypeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from exc


CONFIG_HELP = ("Settings file (TOML) whose keys are the fields behind these flags: task, "
               "run_dir, rounds, seed_harness, task_options = {n_dev = 40}, budget = "
               "{solver_calls = 500}, ... Defaults < the file < the flags typed here.")


def _register_adapt() -> None:
    """`adapt`'s options are AdaptConfig's fields (cli.options), plus `--config` and
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


RESUME_OWN = ("run_dir", "store")
"""AdaptConfig fields `resume` does not take as setting flags: the run directory is its
argument, and --store names where this process finds the log."""


def resume(**options: Any) -> None:
    """Continue a run that was stopped or killed; nothing finished is redone. --rounds N and
    larger budgets (--max-solver-calls ...) extend a run, a finished one too; any other
    setting given must be the run's own (a run keeps its settings)."""
    from harness_learning.graphs.adapter.run import load_config

    ctx, config_file = options.pop("ctx"), options.pop("config_file")
    as_json, store, run_dir = options.pop("as_json"), options.pop("store"), options.pop("run_dir")
    trust = options.pop("trust_inputs")
    values = _read_settings(config_file) if config_file is not None else {}
    with user_errors():
        config = load_config(_run_dir_of(run_dir, values, config_file))
        check_sealed_inputs(config, trust)  # before anything of the run is imported
    settings = {**values, **_typed_settings(ctx, options)}
    if settings.get("experience"):  # typed or in the user's settings file: the user's word
        from harness_learning.harnesses.experience import give_location

        with user_errors():
            give_location(str(settings["experience"]))
    config = _extended(config, settings, config_file, store)
    if store:  # for this process only: config.json keeps the store the run was started on
        config = config.replace(store=store)
    from harness_learning.graphs.adapter.prepared import PreparedRun

    _run(PreparedRun(config), resume=True, as_json=as_json, trust=trust)


def check_sealed_inputs(config: AdaptConfig, trust: bool) -> None:
    from harness_learning.graphs.adapter.inputs import inputs_dir
    from harness_learning.graphs.adapter.sealed_inputs import check_sealed

    check_sealed(inputs_dir(config), trust)


def _typed_settings(ctx: typer.Context, options: dict[str, Any]) -> dict[str, Any]:
    """The settings typed on `resume`'s command line, as a settings file's values (a part
    such as --max-solver-calls as its key of the field's table)."""
    typed = given_options(ctx, options)
    settings: dict[str, Any] = {}
    values = field_values(AdaptConfig, {**options, **dict.fromkeys(RESUME_OWN)})
    for name, info in AdaptConfig.model_fields.items():
        parts = parts_of(info)
        if parts:
            given = {p.key: _plain(options[p.option]) for p in parts if p.option in typed}
            if given:
                settings[name] = given
        elif name in typed:
            settings[name] = values[name]
    return settings


def _plain(value: object) -> object:
    return str(value) if isinstance(value, Path) else value


def _extended(config: AdaptConfig, wanted: dict[str, Any], config_file: Path | None,
              store: str) -> AdaptConfig:
    """The run's config with the rounds and budgets `wanted` raised (`adapter.extend`, logged);
    any other setting `wanted` holds otherwise than the run is refused, each one named."""
    from harness_learning.graphs.adapter.extend import EXTENDABLE, extend_run, extension

    wanted = {k: v for k, v in wanted.items() if k not in RESUME_OWN or k == "run_dir"}
    others = {k: v for k, v in wanted.items() if k not in EXTENDABLE and k != "run_dir"}
    if config_file is not None and "run_dir" in wanted:
        others["run_dir"] = wanted["run_dir"]
    _check_agrees(others, config, config_file)
    budget = wanted.get("budget") or {}
    if isinstance(budget, BaseModel):  # a file's table: the keys it gives
        budget = budget.model_dump(exclude_unset=True)
    with user_errors("resume raises --rounds and the budgets (--max-solver-calls, "
                     "--max-tokens, --max-cost-usd); lower ones are refused"):
        changes = extension(config, wanted.get("rounds"), budget)
        if not changes:
            return config
        how = " ".join(["resume", *(f"{k}={new}" for k, (_, new) in changes.items())])
        config = extend_run(config, changes, how, store)
    said = ", ".join(f"{name} {old} -> {new}" for name, (old, new) in changes.items())
    console.print(f"extending the run: {said} (logged as a decision in the run's log)",
                  markup=False, highlight=False)
    return config


def _read_settings(config_file: Path) -> dict[str, Any]:
    """A settings file's values; a bad one is the command line's one error line (exit 2)."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.graphs.adapter.config_file import ConfigFileError, read_config_file

    try:
        return read_config_file(config_file)
    except ConfigFileError as exc:
        raise CliError(str(exc), exc.hint, EXIT_USAGE) from exc


def _run_dir_of(run_dir: Path | None, values: dict[str, Any], config_file: Path | None) -> Path:
    from harness_learning.cli.errors import EXIT_USAGE, CliError

    if run_dir is not None:
        return run_dir
    if values.get("run_dir"):
        return Path(values["run_dir"])
    where = f"{config_file} has no run_dir" if config_file else "no run directory given"
    raise CliError(where, "give the run directory: `harness-learn resume RUN_DIR`", EXIT_USAGE)


def _check_agrees(values: dict[str, Any], config: AdaptConfig, config_file: Path | None) -> None:
    """A setting given to `resume` (typed, or in a settings file edited since the run started)
    that the run holds otherwise is refused, not silently ignored: each one is named."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.graphs.adapter.config_file import disagreements

    if not values:
        return
    with user_errors():
        clash = disagreements(values, config)
    if clash:
        where = f"{config_file}: " if config_file is not None else ""
        raise CliError(f"{where}the run in {config.run_dir} has other settings: "
                       f"{'; '.join(clash)}", f"a run keeps its settings (only --rounds and the "
                       f"budgets may be raised): `harness-learn resume {config.run_dir}` "
                       "continues it as it is; a new --run-dir starts another", EXIT_USAGE)


def _register_resume() -> None:
    """`resume`'s options: the run directory, its own --config, --json and --store, and
    AdaptConfig's fields (cli.options), of which only the typed ones are compared."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    fields = [p for p in field_parameters(AdaptConfig, required=False)
              if p.name not in RESUME_OWN]
    params = [
        inspect.Parameter("ctx", keyword, annotation=typer.Context),
        inspect.Parameter("run_dir", keyword, annotation=Path | None, default=typer.Argument(
            None, help="A run directory written by `adapt` (default: the --config file's "
                       "run_dir).")),
        *fields,
        inspect.Parameter("config_file", keyword, annotation=Path | None, default=typer.Option(
            None, "--config", help="The settings file the run was started with: its run_dir "
            "is the run to continue; rounds and budgets it raises extend the run, any other "
            "setting it holds otherwise than the run is refused.")),
        inspect.Parameter("as_json", keyword, annotation=bool, default=typer.Option(
            False, "--json", help="End with a JSON summary line.")),
        inspect.Parameter("store", keyword, annotation=StoreOption, default=""),
        inspect.Parameter("trust_inputs", keyword, annotation=bool, default=typer.Option(
            False, "--trust-inputs", help=TRUST_HELP))]
    resume.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    resume.__annotations__ = {p.name: p.annotation for p in params}
    app.command()(resume)


_register_resume()


def _run(run: PreparedRun, *, resume: bool, as_json: bool, test_problems: int = 0,
         trust: bool = False) -> dict:
    """Check the inputs, say which sandbox backend runs the harness, run with the live view;
    returns the final state. `test_problems`: held-out problems the caller tests on after the
    run (the demo), counted in the estimate."""
    from harness_learning.cli.steer_cmd import drive

    with user_errors():
        run = check_inputs(run, trust)
    choose_sandbox("")  # as --sandbox or HARNESS_SANDBOX set it
    return drive(run, resume=resume, as_json=as_json, test_problems=test_problems)


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
    trust_inputs: Annotated[bool, typer.Option("--trust-inputs", help=TRUST_HELP)] = False,
) -> None:
    """Evaluate the seed and each round's selected version on held-out test problems."""
    from harness_learning.cli.errors import unreachable
    from harness_learning.graphs.adapter.final_eval import final_evaluation
    from harness_learning.graphs.adapter.nodes import InfraStop
    from harness_learning.graphs.adapter.prepared import PreparedRun
    from harness_learning.graphs.adapter.run import load_config

    if split != "test":
        raise typer.BadParameter("the final evaluation is on the held-out test split")
    if solver:
        from harness_learning.cli.models_cmd import require_local_models

        require_local_models(solver)
    with user_errors():
        config = load_config(run_dir)
        task = check_inputs(PreparedRun(config), trust_inputs).task
    try:
        summary = run_async(final_evaluation(run_dir, n=n, console=console, task=task,
                                             solver=solver, store=store))
    except InfraStop as exc:  # name the endpoint that failed
        raise unreachable(solver or config.solver, "solver", str(exc), "--solver") from exc
    out.print(summary.table())
    out.print(f"plot: {summary.plot_path}\ndiffs: {summary.diffs_path}")
    if as_json:
        print_json_last(summary.to_json())
