"""Start, resume and watch an adaptation run (the CLI's and Studio's common entry)."""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.graph import build_adapter_graph
from harness_learning.graphs.adapter.inputs import resolve_inputs, store_inputs
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

CONFIG_FILE = "config.json"
CHECKPOINTS_FILE = "checkpoints.sqlite"
THREAD = {"configurable": {"thread_id": "adapt"}}
PENDING = "pending_approval"
"""Key of the final state returned while the approval gate waits for a person."""

OnUpdate = Callable[[str, dict[str, Any]], None]


def prepare(config: AdaptConfig, live: dict[str, Any] | None = None) -> AdaptConfig:
    """Fill track defaults, keep the run's outside inputs (data, start harness, user code) in
    the run dir and write config.json; refuse to reuse a run dir for another config. A
    reasoning-gym run gets its split secret here (`with_split_secret`)."""
    config, harness_source = resolve_inputs(config)
    path = config.path / CONFIG_FILE
    stored = AdaptConfig.from_json(path.read_text()) if path.exists() else None
    config = with_split_secret(config, stored)
    ctx = AdapterContext(config, live=dict(live or {}))
    full = config.with_track_defaults(ctx.task.track)
    _ = ctx.user_tools  # a tool that does not import fails now, before anything is written
    if stored is not None:
        if stored.to_json() != full.to_json():
            raise ValueError(f"{full.path} already holds a run with another config; "
                             "use `harness-learn resume` or a new --run-dir")
    else:
        full.path.mkdir(parents=True, exist_ok=True)
        store_inputs(full, harness_source)
        path.write_text(json.dumps(json.loads(full.to_json()), indent=2))
    return full


def with_split_secret(config: AdaptConfig, stored: AdaptConfig | None) -> AdaptConfig:
    """A reasoning-gym run's splits are seeded from a secret the parent keeps (in config.json,
    which no worker sees): the stored run's, else a fresh one. Public seeds would let harness
    code regenerate the problems with their gold (see `evals.reasoning`)."""
    from harness_learning.evals.reasoning import new_split_secret

    if not config.task.startswith("rg:") or "split_secret" in config.task_options:
        return config
    if stored is not None:  # a run's splits never change (one from before secrets keeps none)
        previous = stored.task_options.get("split_secret")
        if previous is None:
            return config
    else:
        previous = new_split_secret()
    options = {**config.task_options, "split_secret": previous}
    return dataclasses.replace(config, task_options=options)


def load_config(run_dir: str | Path) -> AdaptConfig:
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {run_dir} is not a run directory")
    try:
        config = AdaptConfig.from_json(path.read_text())
    except (ValueError, TypeError) as exc:  # name the file (JSON errors do not)
        raise ValueError(f"{path}: unreadable run config: {exc}") from exc
    config.run_dir = str(run_dir)  # where it is now: it may be opened from another directory
    return config


def freeze_imports() -> None:
    """Take the objects the imports created (about 440k with litellm's) out of the garbage
    collector's scans. Each full collection otherwise walks all of them while thousands of
    model calls allocate: measured with `harness-learn bench round`, ~25% of the parent's CPU
    per call."""
    from harness_learning.harnesses.llm.runtime import import_litellm

    import_litellm()
    gc.collect()
    gc.freeze()


async def run_adaptation(config: AdaptConfig, *, resume: bool = False,
                         on_update: OnUpdate | None = None,
                         context: AdapterContext | None = None,
                         answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run (or continue) the adapter until it stops; returns the final state. A run stopped
    at the approval gate returns with `PENDING` set to what the gate asks; continue it with
    `answer` ({"approve": bool, "reason": str})."""
    ctx = context or AdapterContext(config)
    _ = ctx.store  # opening the log checks its schema: refuse another version's run dir first
    graph = build_adapter_graph(config, ctx)
    freeze_imports()
    config.path.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(config.path / CHECKPOINTS_FILE)) as saver:
        app = graph.compile(checkpointer=saver)
        snapshot = await app.aget_state(THREAD)
        started = bool(snapshot.values)
        if started and not resume:
            raise ValueError(f"{config.path} already holds a started run: resume it instead")
        payload = Command(resume=answer) if answer is not None else (
            None if started else {"task": config.task})
        try:
            async for chunk in app.astream(payload, THREAD, stream_mode="updates"):
                for node, update in chunk.items():
                    if on_update is not None:
                        on_update(node, update if isinstance(update, dict) else {})
        finally:
            await ctx.pool.close()
        snapshot = await app.aget_state(THREAD)
        asks = [i.value for task in snapshot.tasks for i in task.interrupts]
        return {**snapshot.values, PENDING: asks[0]} if asks else snapshot.values


def adapt(config: AdaptConfig | None = None, /, **options: Any) -> Any:
    """Run an adaptation from Python and wait for it: `adapt(harness=..., trainset=[...] |
    task=..., metric=..., tools=[...], rounds=1, run_dir="runs/mine")` (or an `AdaptConfig`,
    or any of its fields). Returns an `AdaptResult` (see `graphs.adapter.api`)."""
    from harness_learning.graphs.adapter.api import adapt as adapt_

    return adapt_(config, **options)
