"""`harness-learn studio`: the LangGraph dev server (for Studio and `langgraph_sdk`), offline."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import app
from harness_learning.cli._common import console

GRAPHS = {name: f"harness_learning.graphs.serving.studio:{name}" for name in
          ("adapter", "harness", "reasoning_direct", "multihop_two_hop", "baseline_tool_loop")}
"""The graphs `studio` serves, named by module (the installed package), never by a path into
a checkout."""
SERVER_DIR = ".langgraph-server"
"""The folder, inside the studio's runs folder, holding the server's langgraph.json and its own
state (.langgraph_api/)."""
TAKEN_PORT = 2024
"""`langgraph dev`'s default port; taken by another service on the machines we run on."""


def offline_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """No analytics, no version check, no LangSmith tracing: the server reaches no network."""
    env = dict(os.environ if base is None else base)
    env.update(LANGGRAPH_CLI_NO_ANALYTICS="1", LANGGRAPH_NO_VERSION_CHECK="true",
               LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false",
               HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
    return env


def write_config(folder: Path) -> Path:
    """`folder/langgraph.json` naming the studio graphs by module, written afresh (so an
    upgrade's graphs are the ones served): the server needs no checkout."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "langgraph.json"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    path.write_text(json.dumps({"dependencies": ["."], "graphs": GRAPHS,
                                "python_version": python}, indent=2) + "\n", encoding="utf-8")
    return path


def server_folder(runs_root: Path) -> Path:
    """Where a studio server runs from: beside the threads' runs, never in a source tree."""
    return runs_root / SERVER_DIR


def dev_command(port: int, host: str = "127.0.0.1", jobs: int = 4, reload: bool = False,
                config: Path | None = None) -> list[str]:
    """The `langgraph dev` argv (the CLI next to this interpreter); without `config`, the
    studio's own langgraph.json, written into the default runs folder's server folder."""
    exe = Path(sys.executable).with_name("langgraph")
    langgraph = str(exe) if exe.exists() else shutil.which("langgraph")
    if langgraph is None:
        raise FileNotFoundError("the `langgraph` CLI is missing: pip install 'langgraph-cli[inmem]'")
    # No --allow-blocking: the server's blocking-call detector stays on, since a blocking call
    # on its event loop would stall every other run and request; the adapter does its file,
    # SQLite and process work in threads.
    argv = [langgraph, "dev", "--host", host, "--port", str(port), "--no-browser",
            "--n-jobs-per-worker", str(jobs),
            "--config", str(config or write_config(server_folder(_runs_root())))]
    return argv if reload else [*argv, "--no-reload"]


def _runs_root() -> Path:
    from harness_learning.graphs.adapter.server_threads import studio_runs_root

    return studio_runs_root()


def port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _checked_settings(path: Path) -> Path:
    """A settings file read now, so a typo is one line before the server starts (absolute:
    the server runs from its own folder; the file's relative paths are read against it)."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.graphs.adapter.config_file import ConfigFileError, read_config_file

    try:
        read_config_file(path)
    except ConfigFileError as exc:
        raise CliError(str(exc), exc.hint, EXIT_USAGE) from exc
    return path.resolve()


@app.command()
def studio(
    port: Annotated[int, typer.Option(help="Port of the server (2024, its default, is often taken).")] = 8123,
    host: Annotated[str, typer.Option(help="Interface; keep 127.0.0.1 unless you mean to share it.")] = "127.0.0.1",
    jobs: Annotated[int, typer.Option(help="Runs executed at once per worker (>1: a harness "
                                            "graph answers while an adaptation runs).")] = 4,
    reload: Annotated[bool, typer.Option(help="Reload when project .py files change.")] = False,
    runs_dir: Annotated[Path | None, typer.Option(help="Where threads without a run_dir keep "
                                                       "their runs (default ~/.cache/...).")] = None,
    model: Annotated[str | None, typer.Option(help="Default Solver of the harness graphs.")] = None,
    config: Annotated[Path | None, typer.Option(help="langgraph.json to serve (default: the "
                                                    "studio's own, written beside its runs).")] = None,
    settings: Annotated[Path | None, typer.Option(
        "--settings", help="A settings file (TOML, as `adapt --config` takes) under every new "
                           "thread's settings: defaults < the file < the settings a run is "
                           "given.")] = None,
) -> None:
    """Serve the adapter and the harness graphs to LangGraph Studio (`langgraph dev`, offline)."""
    from harness_learning.graphs.adapter.server_threads import CONFIG_ENV
    from harness_learning.graphs.serving.studio import MODEL_ENV, RUNS_ENV

    settings_file = _checked_settings(settings) if settings is not None else None
    if jobs < 1:
        raise typer.BadParameter("--jobs must be >= 1")
    if not port_free(host, port):
        hint = " (langgraph's default, taken here)" if port == TAKEN_PORT else ""
        raise typer.BadParameter(f"port {port} on {host} is in use{hint}; pass --port")
    env = offline_env()
    if runs_dir is not None:
        env[RUNS_ENV] = str(runs_dir.resolve())
    if model is not None:
        env[MODEL_ENV] = model
    if settings_file is not None:
        env[CONFIG_ENV] = str(settings_file)
    runs_root = runs_dir.resolve() if runs_dir is not None else _runs_root()
    config_file = config.resolve() if config is not None else \
        write_config(server_folder(runs_root))
    argv = dev_command(port, host, jobs, reload, config_file)
    console.print(f"serving on http://{host}:{port} (API docs /docs); Studio: "
                  f"https://smith.langchain.com/studio/?baseUrl=http://{host}:{port}")
    # Replace this process: Ctrl-C and kill reach the server itself, no orphan is left behind.
    # The working directory is the config's folder, where the server keeps its .langgraph_api/.
    os.chdir(config_file.parent)
    os.execve(argv[0], argv, env)
