"""`harness-learn train {sft,grpo-offline,grpo-online,solver-sft,serve,export}`: train the Proposer
(or the Solver) from execution logs, serve the result, or export it as a GGUF for the local
llama.cpp server.

Each command's options are generated from its settings model (training/config.py) by
`cli.options`, as `adapt`'s are from `AdaptConfig`: the `--help` text is the fields'
descriptions and a new field becomes a new option. A value the model refuses is one line
naming the flag, with the field's help as the hint, and exit 2, before any log is read.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from harness_learning.cli import app, train_app
from harness_learning.cli.errors import EXIT_USAGE, CliError
from harness_learning.cli.options import field_parameters, field_values
from harness_learning.harnesses.rundir import RunDir
from harness_learning.training.config import (
    GRPOOfflineConfig,
    GRPOOnlineConfig,
    SFTTrainConfig,
    SolverSFTConfig,
    TrainConfig,
)

LOGS_HELP = "Run directories whose execution logs (log.sqlite) are read; repeat or list them."


def _parameters(cls: type[TrainConfig]) -> list[inspect.Parameter]:
    params = [
        inspect.Parameter("logs", inspect.Parameter.KEYWORD_ONLY, annotation=list[Path],
                          default=typer.Option([], "--logs", help=LOGS_HELP)),
        inspect.Parameter("more_logs", inspect.Parameter.KEYWORD_ONLY,
                          annotation=list[Path] | None,
                          default=typer.Argument(None, help="More run directories (so that "
                                                 "`--logs A B C` reads all three).",
                                                 show_default=False)),
    ]
    return params + field_parameters(cls)


def _show(result: object) -> None:
    report = getattr(result, "report", None)
    if report is not None:
        counts = {k: v for k, v in dataclasses.asdict(report).items() if k != "notes"}
        typer.echo(f"data: {json.dumps(counts)}")
        for note in report.notes:
            typer.echo(f"data: {note}")
    for name, stats in (getattr(result, "ratio", None) or {}).items():
        typer.echo(f"importance ratio vs the logged log-probs, {name}: {stats.line()}")
    typer.echo(f"metrics: {result.metrics}\nplot: {result.png}")
    if result.checkpoint:
        typer.echo(f"checkpoint: {result.checkpoint}")
    typer.echo("last: " + json.dumps({k: round(v, 5) for k, v in result.summary.items()}))


def _settings_error(name: str, cls: type[TrainConfig], exc: ValidationError) -> CliError:
    """The first value `cls` refused, in `adapt`'s format: the flag, what is wrong with the
    value, and the field's help as the hint."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    flag = "--" + field.replace("_", "-") if field else f"train {name}"
    said = str(error["msg"]).removeprefix("Value error, ")
    got = "" if error["type"] == "value_error" else f" (got {error.get('input')!r})"
    info = cls.model_fields.get(field)
    hint = (f"{field}: {info.description}" if info is not None and info.description
            else f"see `harness-learn train {name} --help`")
    return CliError(f"{flag}: {said}{got}", hint, EXIT_USAGE)


def _config(name: str, cls: type[TrainConfig], options: dict[str, object]) -> TrainConfig:
    """The command's config from its options (popped from `options`), checked by the model."""
    try:
        return cls(**field_values(cls, options))
    except ValidationError as exc:
        raise _settings_error(name, cls, exc) from None


def _register(name: str, cls: type[TrainConfig], runner: str, help_text: str) -> None:
    def command(**kwargs: object) -> None:
        logs = list(kwargs.pop("logs") or []) + list(kwargs.pop("more_logs") or [])
        config = _config(name, cls, kwargs)  # nothing is read before the settings are checked
        teacher = config.teacher if isinstance(config, SFTTrainConfig) else None
        if not logs and not teacher:
            raise typer.BadParameter("give at least one run directory with --logs"
                                     + (" or --teacher" if teacher is not None else ""))
        if teacher:
            from harness_learning.training.data import LogError
            from harness_learning.training.teacher import run_dirs_under

            try:
                run_dirs_under(teacher)
            except LogError as err:
                raise typer.BadParameter(str(err)) from err
        missing = [str(p) for p in logs if not RunDir(p).has_log()]
        if missing:
            raise typer.BadParameter(f"no execution log ({RunDir.LOG}) in: {', '.join(missing)}")
        module, func = runner.rsplit(":", 1)
        train: Callable = getattr(__import__(module, fromlist=[func]), func)
        from harness_learning.training.data import LogError

        try:
            result = train(logs, config)
        except LogError as err:  # the logs hold nothing this trainer can use: say why
            raise CliError(str(err), "give runs with usable proposals, or relax the filters "
                           f"(`harness-learn train {name} --help`)", EXIT_USAGE) from err
        _show(result)

    params = _parameters(cls)
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = help_text
    train_app.command(name, help=help_text)(command)


_register("sft", SFTTrainConfig, "harness_learning.training.sft:train_sft",
          "SFT warm start on successful edits (valid, scored above their parent).")
_register("grpo-offline", GRPOOfflineConfig, "harness_learning.training.grpo_offline:train_grpo_offline",
          "Offline GRPO on logged groups of candidate edits.")
_register("grpo-online", GRPOOnlineConfig, "harness_learning.training.grpo_online:train_grpo_online",
          "Online GRPO (TRL): completions are applied and evaluated in the sandbox; each group "
          "is logged back to an execution log.")

_register("solver-sft", SolverSFTConfig, "harness_learning.training.solver_sft:train_solver_sft",
          "Fine-tune the Solver on its successful trajectories under an evolved harness "
          "(the Solver calls of dev problems it solved); `train export`, then `eval RUN "
          "--solver local:OUT.gguf` tests the pair.")


@train_app.command("serve")
def serve(
    checkpoint: Annotated[Path, typer.Argument(help="A checkpoint written by a train command.")],
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the OpenAI-compatible endpoint.")] = 8011,
    name: Annotated[str, typer.Option(help="Model name the endpoint answers to.")] = "proposer",
) -> None:
    """Serve a trained checkpoint as an OpenAI-compatible endpoint on CPU (transformers), for
    use as the Proposer; on GPUs use `vllm serve CHECKPOINT` instead."""
    from harness_learning.training.serve import run_server

    run_server(checkpoint, host=host, port=port, name=name)


@train_app.command("export")
def export(
    checkpoint: Annotated[Path, typer.Argument(help="A checkpoint written by a train command "
                                               "(OUT/checkpoint) from a GGUF model.")],
    out: Annotated[Path, typer.Option("--out", help="The .gguf file to write.")],
    reference: Annotated[Path | None, typer.Option(
        help="The GGUF the checkpoint was trained from (its tokenizer, chat template and "
             "architecture are copied); default: the `model` its run's config.json names.")
    ] = None,
) -> None:
    """Export a trained student (llama or qwen2, e.g. SmolLM2 or the Qwen2.5-Coder Proposer) as
    a GGUF (Q8_0) that the local llama.cpp server loads: then `--proposer OUT.gguf` (or, for
    `train solver-sft`'s, `--solver local:OUT.gguf`) uses it."""
    from harness_learning.cli._common import user_errors

    with user_errors("give a checkpoint folder written by `harness-learn train ...`"):
        if out.suffix != ".gguf":
            raise ValueError(f"--out {out} must end in .gguf")
        if not (checkpoint / "config.json").is_file():
            raise FileNotFoundError(f"{checkpoint} holds no config.json: not a checkpoint")
        from harness_learning.training.export import export_checkpoint

        path = export_checkpoint(checkpoint, reference, out)
    typer.echo(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB): use it with "
               f"--proposer {path} (or --solver local:{path})")


@app.command("collect-edits")
def collect_edits(
    proposer: Annotated[str, typer.Option(help="The teacher Proposer ('local' or a litellm model string).")],
    tasks: Annotated[str, typer.Option(help="Training task types, comma-separated (e.g. rg:basic_arithmetic,rg:leg_counting).")],
    per_task: Annotated[int, typer.Option(help="Proposals per task, all answering the seed harness's prompt.")],
    out: Annotated[Path, typer.Option(help="Folder receiving one run directory per task (give it to `train sft --teacher`).")],
    solver: Annotated[str, typer.Option(help="Solver that scores each candidate.")] = "local",
    feedback: Annotated[int | None, typer.Option(help="Feedback problems in the report (track default if unset).")] = None,
    selection: Annotated[int | None, typer.Option(help="Selection problems each candidate is scored on (track default if unset).")] = None,
    edit_format: Annotated[str | None, typer.Option(help="search_replace, whole_program or function (track default if unset).")] = None,
    proposer_max_tokens: Annotated[int, typer.Option(help="Proposer completion limit.")] = 2048,
    temperature: Annotated[float, typer.Option(help="Proposer sampling temperature.")] = 0.7,
    seed: Annotated[int, typer.Option(help="Seed of problem sampling and Proposer samples.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Problems in flight per evaluation.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
) -> None:
    """Teacher runs for `train sft --teacher`: single-step proposals on training task types,
    each scored by the real Solver; successful edits are valid and beat the seed."""
    from harness_learning.cli._common import print_json_last, user_errors
    from harness_learning.cli.collect_edits import collect_edits as collect
    from harness_learning.cli.collect_edits import task_config

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    with user_errors():
        if not names:
            raise ValueError("--tasks is empty: give task types, comma-separated "
                             "(e.g. rg:basic_arithmetic,rg:leg_counting)")
        configs = [task_config(t, out, proposer, per_task, solver=solver, feedback=feedback,
                               selection=selection, edit_format=edit_format, seed=seed,
                               proposer_params={"temperature": temperature,
                                                "max_tokens": proposer_max_tokens},
                               concurrency=concurrency) for t in names]

        def shown(r) -> None:
            typer.echo(f"{r.task}: {r.proposals} proposals, {r.valid} valid, {r.successful} "
                       f"successful edits -> {r.run_dir}")

        results = collect(configs, on_task=shown)
    total = sum(r.successful for r in results)
    typer.echo(f"{total} successful edits in {out} (train on them: harness-learn train sft "
               f"--teacher {out})")
    if as_json:
        print_json_last({"out": str(out), "successful": total, "tasks": [
            {"task": r.task, "run_dir": str(r.run_dir), "proposals": r.proposals,
             "valid": r.valid, "successful": r.successful} for r in results]})


@train_app.command("demonstrations")
def demonstrations(
    logs: Annotated[list[Path], typer.Option("--logs", help=LOGS_HELP + " A folder of run "
                                             "directories counts as each of them.")],
    out: Annotated[Path, typer.Option("--out", help="The JSONL file to write (its summary goes "
                                      "beside it as .summary.json).")],
    more_logs: Annotated[list[Path] | None, typer.Argument(
        help="More run directories (so that `--logs A B C` reads all three).",
        show_default=False)] = None,
) -> None:
    """SFT demonstrations in the Proposer's focused format from logged successes: Proposer
    function edits and interpreter-operator adoptions (inlined) that are valid and beat their
    parent on selection, with provenance and the prompt format's hash."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.training.data import LogError
    from harness_learning.training.demonstrations import demonstrations as build
    from harness_learning.training.teacher import run_dirs_under

    try:
        rows, summary = build(run_dirs_under([*logs, *(more_logs or [])]))
    except LogError as err:
        raise CliError(str(err), "give runs of `adapt --edit-format function` (with operators "
                       "on) whose log holds valid candidates that beat their parent",
                       EXIT_USAGE) from err
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out.with_suffix(".summary.json").write_text(json.dumps(summary.to_dict(), indent=1),
                                                encoding="utf-8")
    for line in summary.lines():
        typer.echo(f"data: {line}")
    typer.echo(f"wrote {len(rows)} demonstrations to {out}")
