"""Which harness source a reference names: a seed, a harness file, or a version of a run
directory (with the task and Solver that run used), and what serving it needs (`open_harness`:
the Solver, the task, the user tools, whether inputs carry more fields). `load_harness`,
`serve` (Studio, the LangChain tools) and `harness-learn run` all open a harness here."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.evals.task import Task

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.harnesses.usertools import UserTools

TaskRef = str | dict[str, Any] | Task | None
"""The task whose retriever backs `tools.search`: a name, {"name": ..., "options": {...}},
a `Task`, or None (no retriever)."""


@dataclass(frozen=True)
class HarnessSource:
    """A harness's source text and where it came from (a run directory knows its task and models)."""

    source: str
    origin: str
    task: str | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    solver: str | None = None
    config: AdaptConfig | None = None
    """The run's `AdaptConfig` for a run directory (its tools are reopened from it)."""

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()


def resolve_harness(ref: str | Path, version: str = "current") -> HarnessSource:
    """A seed name, a harness file, or a run directory (its `version`: `current` = the one the
    adapter holds now, `best` = the highest selection score of the adopted chain, or a sha
    prefix of any stored version)."""
    from harness_learning.harnesses.seeds import SEEDS, seed_source

    if isinstance(ref, str) and ref in SEEDS:
        return HarnessSource(seed_source(ref), f"seed {ref}")
    path = Path(ref).expanduser()
    if path.is_dir():
        return _from_run_dir(path, version)
    if path.is_file():
        return HarnessSource(path.read_text(encoding="utf-8"), f"file {path}")
    raise FileNotFoundError(f"harness {str(ref)!r} is not a seed ({', '.join(SEEDS)}), "
                            "a harness file or a run directory")


def _from_run_dir(path: Path, version: str) -> HarnessSource:
    from harness_learning.graphs.adapter.inputs import task_args
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.harnesses.rundir import RunDir

    config = load_config(path)  # raises, naming config.json, if this is no run directory
    with RunDir(path).open_store() as store:
        lineage = store.lineage()
        if version in ("current", "best"):
            if not lineage:
                raise LookupError(f"run directory {path} holds no harness version yet")
            step = lineage[-1] if version == "current" else max(
                lineage, key=lambda s: (s.selection_score if s.selection_score is not None
                                        else -1.0, s.round))
            sha, label = step.sha, f"round {step.round}"
        else:
            found = [v.sha for v in store.iter_versions() if v.sha.startswith(version)]
            if len(found) != 1:
                raise LookupError(f"run directory {path}: version {version!r} matches "
                                  f"{len(found)} stored versions (want exactly one)")
            sha, label = found[0], "by sha"
        source = store.get_version_source(sha)
    task, options = task_args(config, serving=True)  # the stored data copy, the run's options
    return HarnessSource(source, f"run {path} version {sha[:12]} ({label})", task, options,
                         config.solver, config)


@dataclass(frozen=True)
class OpenedHarness:
    """A harness reference opened for serving: the source, the Solver and task it runs with,
    and the user tools it may call (given, else a run directory's own, opened on demand: a
    run's MCP servers start only when a runner is made)."""

    found: HarnessSource
    model: str
    task: TaskRef
    given_tools: object = None
    """Tool objects or references (one, or a list or tuple), or a `UserTools`."""

    @property
    def with_fields(self) -> bool:
        """A run on a data file of one's own: its problems may carry more public fields."""
        from harness_learning.evals.custom.datafile import is_data_path

        return self.found.config is not None and is_data_path(self.found.config.task)

    @property
    def tools_key(self) -> int | tuple[str, ...]:
        """What names the user tools, for reusing a warm runner: a run's tool references, or
        the given tools' identity."""
        if self.given_tools is not None:
            return id(self.given_tools)
        return tuple(self.found.config.tools) if self.found.config is not None else ()

    def user_tools(self) -> UserTools | None:
        """The given tools (tool objects, references as `--tools` takes them: `mcp:COMMAND
        ARGS...`, `mcp+http://...`, `module:attr`, `file.py:attr`; or a `UserTools`), else the
        run directory's own."""
        from harness_learning.graphs.adapter.inputs import tool_object
        from harness_learning.harnesses.usertools import UserTools, build_user_tools

        tools = self.given_tools
        if isinstance(tools, UserTools):
            return tools
        if tools is not None:
            items = list(tools) if isinstance(tools, list | tuple) else [tools]
            origins = [t if isinstance(t, str) else repr(t)[:60] for t in items]
            return build_user_tools([tool_object(t) if isinstance(t, str) else t
                                     for t in items], origins)
        if self.found.config is not None:
            from harness_learning.graphs.adapter.inputs import open_tools

            return open_tools(self.found.config)
        return None


def open_harness(ref: str | Path, *, model: str | None = None, task: TaskRef = None,
                 version: str = "current", tools: object = None) -> OpenedHarness:
    """`ref` resolved (`resolve_harness`), with the Solver and task given, else the run's,
    else the local Solver and no task."""
    found = resolve_harness(ref, version)
    if task is None and found.task is not None:
        task = {"name": found.task, "options": found.task_options}
    return OpenedHarness(found, model or found.solver or "local", task, tools)


__all__ = ["HarnessSource", "OpenedHarness", "open_harness", "resolve_harness"]
