"""`harness-learn train {sft,grpo-offline,grpo-online,serve}`: train the Proposer from execution
logs and serve the result.

Each command's options are generated from its config dataclass (training/config.py) by
`graphs.cli.options`, as `adapt`'s are from `AdaptConfig`: the `--help` text is the fields'
help metadata and a new field becomes a new option.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from harness_learning.graphs.cli import train_app
from harness_learning.graphs.cli.options import field_parameters, field_values
from harness_learning.harnesses.rundir import RunDir
from harness_learning.training.config import GRPOOfflineConfig, GRPOOnlineConfig, SFTTrainConfig

LOGS_HELP = "Run directories whose execution logs (log.sqlite) are read; repeat or list them."


def _parameters(cls: type) -> list[inspect.Parameter]:
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
        typer.echo(f"data: {json.dumps(dataclasses.asdict(report))}")
    typer.echo(f"metrics: {result.metrics}\nplot: {result.png}")
    if result.checkpoint:
        typer.echo(f"checkpoint: {result.checkpoint}")
    typer.echo("last: " + json.dumps({k: round(v, 5) for k, v in result.summary.items()}))


def _register(name: str, cls: type, runner: str, help_text: str) -> None:
    def command(**kwargs: object) -> None:
        logs = list(kwargs.pop("logs") or []) + list(kwargs.pop("more_logs") or [])
        if not logs:
            raise typer.BadParameter("give at least one run directory with --logs")
        missing = [str(p) for p in logs if not RunDir(p).has_log()]
        if missing:
            raise typer.BadParameter(f"no execution log ({RunDir.LOG}) in: {', '.join(missing)}")
        module, func = runner.rsplit(":", 1)
        train: Callable = getattr(__import__(module, fromlist=[func]), func)
        _show(train(logs, cls(**field_values(cls, kwargs))))

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
