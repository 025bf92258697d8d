"""What a run needs from outside, kept inside its run directory: the start harness, the data
file of a task of one's own, the `.py` files its metric, task class or tools come from, and the
files an MCP server's command names by a relative path (`mcp:python3 server.py`).

`store_inputs` copies them into `RUN_DIR/inputs/` when a run is prepared, so `resume`, `eval`,
`show`, `load_harness(run_dir)` and Studio reopen any run with no extra arguments and without
the original files. A `module:attr` reference (an installed module) is re-imported by name, with
a clear error when it cannot be. Objects given live from Python (a metric or tool defined in a
script) are recorded as `live:NAME`; reopening such a run needs them passed again.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.evals.custom.datafile import is_data_path
from harness_learning.evals.custom.imports import file_of, resolve
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.sealed_inputs import START_HARNESS as _SEALED_START
from harness_learning.graphs.adapter.sealed_inputs import seal
from harness_learning.harnesses.mcptools import close_server, server_files
from harness_learning.harnesses.rundir import RunDir

if TYPE_CHECKING:
    from harness_learning.evals.task import Task
    from harness_learning.harnesses.usertools import UserTools

INPUTS_DIR = RunDir.INPUTS
START_HARNESS = _SEALED_START
LIVE_PREFIX = "live:"


class MissingInput(LookupError):
    """A run input that is neither stored in the run directory nor importable."""


def inputs_dir(config: AdaptConfig) -> Path:
    return config.path / INPUTS_DIR


def resolve_inputs(config: AdaptConfig) -> tuple[AdaptConfig, str | None]:
    """The config as stored (a `describe` given as @file becomes its text, a harness given as
    source text becomes the stored file's name) and the start source to store (None for a
    seed, which the package holds)."""
    config = config.replace(tools=list(config.tools))
    if config.describe and config.describe.startswith("@"):
        config.describe = _read_text(config.describe[1:], "--describe")
    source = harness_text(config.seed_harness) if config.seed_harness is not None else None
    if source is not None and "\n" in (config.seed_harness or ""):
        config.seed_harness = f"{INPUTS_DIR}/{START_HARNESS}"
    return config, source


def store_inputs(config: AdaptConfig, harness_source: str | None) -> None:
    """Copy the run's outside inputs into `RUN_DIR/inputs/`."""
    folder = inputs_dir(config)
    folder.mkdir(parents=True, exist_ok=True)
    if is_data_path(config.task) and Path(config.task).exists():
        _copy(Path(config.task), folder)
    for ref in [config.task, config.metric or "", *config.tools]:
        name = file_of(ref)
        if name and Path(name).is_file():
            _copy(Path(name), folder)
    for ref in config.tools:  # an MCP server's files (`mcp:python3 server.py`)
        kept = server_files(ref)
        for server_file in kept:
            _copy(server_file, folder)
        if kept:  # the run starts the kept copy: the session that checked the original ends
            close_server(ref)
    if harness_source is not None:
        (folder / START_HARNESS).write_text(harness_source, encoding="utf-8")
    seal(folder)  # kept by this user: `resume` and `eval` may import it (`sealed_inputs`)


def keeps_copies(config: AdaptConfig) -> bool:
    """Whether the run reads a file it keeps a copy of (a data file, a metric, a tool module,
    an MCP server's files): what was opened from the originals to check it is not what it
    runs on, so the run opens its copies itself."""
    refs = [config.task, config.metric or "", *config.tools]
    return (is_data_path(config.task) or any(file_of(ref) for ref in refs)
            or any(server_files(ref) for ref in config.tools))


_MODULE_GRAPH = re.compile(r"^graph\s*(?::[^=\n]*)?=", re.MULTILINE)


def harness_text(harness: str) -> str | None:
    """The source a start harness names: its text, a file's text, or None for a seed name."""
    from harness_learning.harnesses.seeds import SEEDS

    if harness in SEEDS:
        return None
    if "\n" in harness and ("build_graph" in harness or _MODULE_GRAPH.search(harness)):
        return harness  # source text: a build_graph, or a module's compiled `graph = ...`
    path = Path(harness).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"harness {harness!r} is neither a seed ({', '.join(SEEDS)}), "
                                "a harness file, nor harness source text")
    return path.read_text(encoding="utf-8")


def start_source(config: AdaptConfig, task: Task | None) -> str:
    """The run's start harness: the stored copy, else the named seed (the task's by default)."""
    from harness_learning.harnesses.seeds import seed_source

    stored = inputs_dir(config) / START_HARNESS
    if stored.is_file():
        return stored.read_text(encoding="utf-8")
    if config.seed_harness is not None and not config.seed_harness.startswith(INPUTS_DIR):
        source = harness_text(config.seed_harness)
        if source is not None:
            return source
    return seed_source(config.seed_harness or task.seed)


def task_args(config: AdaptConfig, live: Mapping[str, Any] | None = None,
              serving: bool = False) -> tuple[str, dict]:
    """`(name, options)` for `get_task`: the stored copy of a data file, the run's metric,
    description and retrieval choices merged into the task's options. `serving`: only the
    retriever will be used, so a live metric that is not at hand is left out."""
    name = config.task
    if is_data_path(name):
        copy = inputs_dir(config) / Path(name).name
        name = str(copy) if copy.exists() else name
    options = dict(config.task_options)
    extra = {"metric": config.metric, "describe": config.describe,
             "index_backend": config.index_backend, "aliases": config.aliases}
    options.update({k: v for k, v in extra.items() if v is not None})
    if serving and str(options.get("metric", "")).startswith(LIVE_PREFIX):
        options.pop("metric")
    elif isinstance(options.get("metric"), str):
        options["metric"] = _metric(options["metric"], config, live or {})
    return name, options


def open_task(config: AdaptConfig, live: Mapping[str, Any] | None = None) -> Task:
    from harness_learning.evals.registry import get_task

    name, options = task_args(config, live)
    if ":" in name and not name.startswith("rg:") and file_of(name):
        base = inputs_dir(config)
        stored = base / Path(file_of(name) or "").name
        if stored.is_file():
            name = f"{stored}:{name.rpartition(':')[2]}"
    return get_task(name, **options)


def _metric(spec: str, config: AdaptConfig, live: Mapping[str, Any]) -> Any:
    if spec.startswith(LIVE_PREFIX):
        if spec not in live:
            raise MissingInput(f"metric {spec!r} was a Python object given to adapt(); pass "
                               "it again (metric=...) to reopen this run")
        from harness_learning.evals.custom.metrics import Metric

        fn = live[spec]
        return Metric(spec, f"your metric {spec[len(LIVE_PREFIX):]}", fn, per_gold=False)
    if file_of(spec):
        stored = inputs_dir(config) / Path(file_of(spec) or "").name
        if stored.is_file():
            return f"{stored}:{spec.rpartition(':')[2]}"
    return spec


def open_tools(config: AdaptConfig, live: Mapping[str, Any] | None = None
               ) -> UserTools | None:
    """The run's user tools (None when it has none), re-imported by reference."""
    from harness_learning.harnesses.usertools import build_user_tools

    if not config.tools:
        return None
    objects = []
    for ref in config.tools:
        if ref.startswith(LIVE_PREFIX):
            if ref not in (live or {}):
                raise MissingInput(f"tool {ref!r} was a Python object given to adapt(); pass "
                                   "it again (tools=[...]) to reopen this run")
            objects.append((live or {})[ref])
        else:
            objects.append(tool_object(ref, base=inputs_dir(config)))
    return build_user_tools(objects, config.tools)


def tool_object(ref: str, base: Path | None = None) -> Any:
    """What a `--tools` reference names: an MCP server's tools (`mcp:COMMAND ARGS...` over
    stdio, `mcp+http://HOST:PORT/PATH`; `harnesses.mcptools`), else the `module:attr` or
    `file.py:attr` object. A stdio server's relative files are the copies kept in `base`."""
    from harness_learning.harnesses.mcptools import is_mcp, kept_ref, mcp_tools

    if is_mcp(ref):
        return mcp_tools(kept_ref(ref, base))
    return resolve(ref, "tool", base=base)


def _copy(path: Path, folder: Path) -> None:
    target = folder / path.name
    if path.resolve() == target.resolve():
        return
    if path.is_dir():
        shutil.copytree(path, target, dirs_exist_ok=True)
    else:
        shutil.copyfile(path, target)


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(f"{what} @{path}: cannot read it ({exc.strerror})") from None
