"""The `harness-learn` command line. Each command group lives in its own module and registers
itself on `app`; importing this package wires them all, and then every module an installed
distribution names under the `harness_learning.commands` entry point (the lab's `bench` and
`experiment` commands, from a source checkout)."""

from __future__ import annotations

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()

import typer  # noqa: E402

app = typer.Typer(
    name="harness-learn",
    help="Test-time harness adaptation: evolve the LangGraph harness around a frozen Solver.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
bench_app = typer.Typer(help="Benchmarks: print figures from one run (the lab's, installed by a "
                        "source checkout's `make venv`).", no_args_is_help=True)
index_app = typer.Typer(help="Build and query retrieval indexes.", no_args_is_help=True)
train_app = typer.Typer(help="Train the Proposer (or the Solver) from execution logs.", no_args_is_help=True)
models_app = typer.Typer(help="Local models: list them, fetch the Proposer's.", no_args_is_help=True)
sandbox_app = typer.Typer(help="The sandbox: build the Docker backend's image.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
app.add_typer(index_app, name="index")
app.add_typer(train_app, name="train")
app.add_typer(models_app, name="models")
app.add_typer(sandbox_app, name="sandbox")

from harness_learning.cli import (  # noqa: E402,F401  (each module registers its commands)
    adapt_cmd,
    demo_cmd,
    experience_cmd,
    export_cmd,
    index_cmd,
    models_cmd,
    run_cmd,
    sandbox_cmd,
    show_cmd,
    steer_cmd,
    studio_cmd,
    train_cmd,
)

COMMANDS_GROUP = "harness_learning.commands"


def _load_command_plugins() -> None:
    """Import each module named in the entry-point group: it registers its commands on import.
    One that does not import costs its own commands only, said in one line, never the CLI."""
    import sys
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            entry.load()
        except ImportError as e:
            print(f"harness-learn: the commands of {entry.value} are unavailable: {e}",
                  file=sys.stderr)


_load_command_plugins()

__all__ = ["app", "bench_app", "index_app", "models_app", "sandbox_app", "train_app"]
