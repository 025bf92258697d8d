"""Graph factories for `langgraph.json` (LangGraph Studio and `langgraph dev`/`langgraph up`).

The server calls a factory per run with the run's config, so `configurable` values choose what
runs, without a restart:

- `adapter`: the adaptation loop. Every `AdaptConfig` field may be set in `configurable` (task,
  solver, proposer, rounds, candidates, policy, run_dir, feedback, selection, approval, ...).
  Without `run_dir` a thread gets `<studio runs>/<thread_id>`, outside the source tree (a
  `.py` file written under the project would reload the dev server). The run directory holds
  the execution log; the server's own checkpointer holds the thread's state.
- `reasoning_direct`, `multihop_two_hop`, `baseline_tool_loop`: the seed and baseline harnesses.
- `harness`: the version a run directory holds now (`configurable.run_dir`; `version` =
  `current`, `best` or a sha prefix), re-read per run, so a newly adopted version is served at once.

Harness graphs run the harness source in a sandbox worker (see `graphs.embed`); configurable
`model` picks the Solver (default: the run's Solver, else `$HARNESS_LEARNING_STUDIO_MODEL`, else
`local`) and `task` (with `task_options`, e.g. `index_dir`) the retriever behind `tools.search`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from harness_learning.graphs.embed import serve
from harness_learning.harnesses.offline import set_offline_switches
from langchain_core.runnables import RunnableConfig

set_offline_switches()

RUNS_ENV = "HARNESS_LEARNING_STUDIO_RUNS"
MODEL_ENV = "HARNESS_LEARNING_STUDIO_MODEL"
RUN_DIR_ENV = "HARNESS_LEARNING_RUN_DIR"
DEFAULT_TASK = "rg:basic_arithmetic"


def studio_runs_root() -> Path:
    """Where threads without a `run_dir` keep their run (default: ~/.cache, outside the tree)."""
    value = os.environ.get(RUNS_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "harness-learning" / "studio-runs"


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    return dict((config or {}).get("configurable") or {})


# -- the adapter ------------------------------------------------------------------------------

def adapt_config(config: RunnableConfig | None) -> Any:
    """The `AdaptConfig` a run's configurable values describe (track defaults filled)."""
    from harness_learning.evals.registry import track_of
    from harness_learning.graphs.adapter.config import AdaptConfig, Budget
    from harness_learning.graphs.adapter.inputs import open_task
    from harness_learning.graphs.adapter.racing import RaceRule

    conf = _configurable(config)
    known = {f.name for f in fields(AdaptConfig)}
    values = {k: v for k, v in conf.items() if k in known and v is not None}
    values.setdefault("task", DEFAULT_TASK)
    if "run_dir" not in values:
        thread = re.sub(r"[^A-Za-z0-9_.-]", "_", str(conf.get("thread_id") or "default"))
        values["run_dir"] = str(studio_runs_root() / thread)
    if isinstance(values.get("budget"), dict):
        values["budget"] = Budget(**values["budget"])
    if isinstance(values.get("race"), dict):
        values["race"] = RaceRule.from_dict(values["race"])
    base = AdaptConfig(**values)
    return base.with_track_defaults(track_of(base.task, base.task_options)
                                    or open_task(base).track)


@contextlib.asynccontextmanager
async def adapter(config: RunnableConfig) -> AsyncIterator[Any]:
    """The adapter graph for this run; its worker pool is closed when the run ends."""
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.graphs.adapter.graph import build_adapter_graph
    from harness_learning.graphs.adapter.run import prepare

    cfg = await asyncio.to_thread(adapt_config, config)  # off the server's loop: it reads files
    if _configurable(config).get("__is_for_execution__"):  # not for schema or state reads
        # writes config.json; refuses a run dir that holds another config
        cfg = await asyncio.to_thread(prepare, cfg)
    async with AdapterContext.from_config(cfg) as ctx:  # starts a pool only if a run evaluates
        yield build_adapter_graph(cfg, ctx).compile(name="adapter")


# -- harness graphs ---------------------------------------------------------------------------

async def _serve(ref: str | Path, config: RunnableConfig | None, name: str) -> Any:
    """Resolved in a thread: reading a run directory is blocking I/O, kept off the server's loop."""
    return await asyncio.to_thread(_serve_now, ref, _configurable(config), name)


def _serve_now(ref: str | Path, conf: dict[str, Any], name: str) -> Any:
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


async def reasoning_direct(config: RunnableConfig) -> Any:
    """Seed, reasoning track: one Solver call that answers directly."""
    return await _serve("reasoning_direct", config, "reasoning_direct")


async def multihop_two_hop(config: RunnableConfig) -> Any:
    """Seed, multi-hop QA: search, summarise, search again, answer (set `task` for a retriever)."""
    return await _serve("multihop_two_hop", config, "multihop_two_hop")


async def baseline_tool_loop(config: RunnableConfig) -> Any:
    """Baseline: a fixed, human-written tool loop of up to 5 Solver turns."""
    return await _serve("baseline_tool_loop", config, "baseline_tool_loop")


async def harness(config: RunnableConfig) -> Any:
    """A run directory's current version (or `version`), else `harness` (a file or seed name)."""
    conf = _configurable(config)
    ref = conf.get("run_dir") or conf.get("harness") or os.environ.get(RUN_DIR_ENV) \
        or "reasoning_direct"
    return await _serve(ref, config, "harness")


__all__ = ["adapt_config", "adapter", "baseline_tool_loop", "harness", "multihop_two_hop",
           "reasoning_direct", "studio_runs_root"]
