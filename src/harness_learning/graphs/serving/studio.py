"""Graph factories for `langgraph.json` (LangGraph Studio and `langgraph dev`/`langgraph up`).

The server calls a factory per run with the run's config, so `configurable` values choose what
runs, without a restart:

- `adapter`: the adaptation loop. Its settings (task, data, metric, harness, solver, proposer,
  rounds, candidates, policy, approval, budgets, ...: `AdaptConfig`'s fields) are its typed
  context, so Studio shows them as a form and the SDK takes `context={...}` (or
  `configurable`). A thread keeps the settings of its first run: resuming and reading it need
  none. Without `run_dir` a thread gets `<studio runs>/<thread_id>`, outside the source tree.
  The run's execution log is where its `store` setting says (log.sqlite in the run directory,
  or a postgresql://... database); the server's own checkpointer keeps the thread's state
  (see `graphs.adapter.server_threads` and docs/SCALE_OUT.md, "Runs on a LangGraph server").
- `reasoning_direct`, `multihop_two_hop`, `baseline_tool_loop`: the seed and baseline harnesses.
- `harness`: the version a run directory holds now (`configurable.run_dir`; `version` =
  `current`, `best` or a sha prefix), re-read per run, so a newly adopted version is served at once.

Harness graphs run the harness source in a sandbox worker and show its own nodes and edges,
streaming its state after each (see `graphs.serving.mirror`); configurable
`model` picks the Solver (default: the run's Solver, else `$HARNESS_LEARNING_STUDIO_MODEL`, else
`local`) and `task` (with `task_options`, e.g. `index_dir`) the retriever behind `tools.search`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from harness_learning.graphs.adapter.server_threads import RUNS_ENV, studio_runs_root
from harness_learning.graphs.serving.embed import serve
from harness_learning.graphs.serving.mirror import ServedHarness
from harness_learning.harnesses.offline import set_offline_switches

if TYPE_CHECKING:  # the server resolves the annotation itself, to pass its runtime
    from langgraph_sdk.runtime import ServerRuntime

set_offline_switches()

MODEL_ENV = "HARNESS_LEARNING_STUDIO_MODEL"
RUN_DIR_ENV = "HARNESS_LEARNING_RUN_DIR"


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    return dict((config or {}).get("configurable") or {})


# -- the adapter ------------------------------------------------------------------------------

@contextlib.asynccontextmanager
async def adapter(config: RunnableConfig, runtime: ServerRuntime
                  ) -> AsyncIterator[CompiledStateGraph]:
    """The adapter graph. Its settings are its context schema (`AdapterSettings`: Studio's
    form); a thread keeps them (`graphs.adapter.server_threads`). The run's resources are opened by
    its first node and closed when the run ends; a schema or state read opens nothing.

    The settings are read from the server runtime's context as the request gave it: the server
    drops keys its schema lacks before the graph sees them, which would silently run a
    misspelt setting's default and lose `seed_harness` (the TOML name of `harness`).

    A thread that finishes adds its judged changes to its `experience` library, as `adapt` and
    `resume` do at their end: inside its last node, so the run the client waits on has
    written them when it ends."""
    from harness_learning.graphs.adapter.graph import build_adapter_graph
    from harness_learning.graphs.adapter.run import keep_experience
    from harness_learning.graphs.adapter.server_threads import ThreadRun

    given = getattr(runtime, "context", None)
    async with ThreadRun(_configurable(config).get("thread_id"),
                         given if isinstance(given, dict) else None) as source:
        yield build_adapter_graph(source, on_finish=keep_experience).compile(name="adapter")


# -- harness graphs ---------------------------------------------------------------------------

async def _serve(ref: str | Path, config: RunnableConfig | None, name: str) -> ServedHarness:
    """Resolved in a thread: reading a run directory is blocking I/O, kept off the server's loop."""
    return await asyncio.to_thread(_serve_now, ref, _configurable(config), name)


def _serve_now(ref: str | Path, conf: dict[str, Any], name: str) -> ServedHarness:
    task = conf.get("task")
    if task is not None:  # e.g. {"task": "hotpotqa", "task_options": {"index_dir": "..."}}
        task = {"name": task, "options": dict(conf.get("task_options") or {})}
    return serve(ref, model=conf.get("model") or _default_model(ref), task=task,
                 version=str(conf.get("version") or "current"), name=name)


def _default_model(ref: str | Path) -> str | None:
    """A run directory's own Solver wins over the server-wide default."""
    if Path(ref).is_dir():
        return None
    return os.environ.get(MODEL_ENV) or "local"


async def reasoning_direct(config: RunnableConfig) -> ServedHarness:
    """Seed, reasoning track: one Solver call that answers directly."""
    return await _serve("reasoning_direct", config, "reasoning_direct")


async def multihop_two_hop(config: RunnableConfig) -> ServedHarness:
    """Seed, multi-hop QA: search, summarise, search again, answer (set `task` for a retriever)."""
    return await _serve("multihop_two_hop", config, "multihop_two_hop")


async def baseline_tool_loop(config: RunnableConfig) -> ServedHarness:
    """Baseline: a fixed, human-written tool loop of up to 5 Solver turns."""
    return await _serve("baseline_tool_loop", config, "baseline_tool_loop")


async def harness(config: RunnableConfig) -> ServedHarness:
    """A run directory's current version (or `version`), else `harness` (a file or seed name)."""
    conf = _configurable(config)
    ref = conf.get("run_dir") or conf.get("harness") or os.environ.get(RUN_DIR_ENV) \
        or "reasoning_direct"
    return await _serve(ref, config, "harness")


__all__ = ["RUNS_ENV", "adapter", "baseline_tool_loop", "harness", "multihop_two_hop",
           "reasoning_direct", "studio_runs_root"]
