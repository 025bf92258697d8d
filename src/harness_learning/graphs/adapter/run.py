"""Start, resume and watch an adaptation run (the CLI's and Studio's common entry)."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.types import Command, StateSnapshot

from harness_learning.evals.registry import track_of
from harness_learning.evals.user_failures import check_metric
from harness_learning.graphs.adapter.budget import BudgetStop, check_priced
from harness_learning.graphs.adapter.checkpoints import open_checkpointer
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.extend import reopen
from harness_learning.graphs.adapter.graph import build_adapter_graph
from harness_learning.graphs.adapter.inputs import (
    keeps_copies,
    open_task,
    open_tools,
    resolve_inputs,
    store_inputs,
)
from harness_learning.graphs.adapter.prepared import PreparedRun
from harness_learning.graphs.adapter.stored_config import check_types
from harness_learning.graphs.adapter.trace_spans import run_spans
from harness_learning.harnesses.edits.function_edit import focus_targets
from harness_learning.harnesses.edits.operators import resolve_operators
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.usertools import check_tools_given

THREAD = {"configurable": {"thread_id": "adapt"}}
PENDING = "pending_approval"
"""Key of the final state returned while the approval gate waits for a person."""

OnUpdate = Callable[[str, dict[str, Any]], None]


class ConfigClash(ValueError):
    """A run directory already holds a run started with another config."""


def prepare(config: AdaptConfig, live: dict[str, Any] | None = None) -> PreparedRun:
    """Fill track defaults, keep the run's outside inputs (data, start harness, user code) in
    the run dir and write config.json; refuse to reuse a run dir for another config. A built-in
    task's track is known from its name, so it is not loaded here (the context loads it once);
    a task of one's own is opened here, to learn its track and to fail before anything is
    written; its metric is checked on the gold answers here (`evals.user_failures.check_metric`).
    A reasoning-gym run gets its split secret here (`with_split_secret`). The run comes back
    with the task (if opened) and tools it was checked with, for the run to use."""
    config, harness_source = resolve_inputs(config)
    run = RunDir(config.path)
    stored = load_config(run) if run.is_run() else None
    config = with_split_secret(config, stored)
    live = dict(live or {})
    track = track_of(config.task, config.task_options)
    task = None
    if track is None:
        task = open_task(config, live)
        track = task.track
        check_metric(task)  # a metric that fails on a gold answer fails now, not every round
    full = config.with_track_defaults(track)
    resolve_operators(full.operators)  # an unknown operator fails now, with the known names
    check_library(full)  # a damaged or newer library fails now, before anything is written
    check_priced(full)  # a $ budget with an unpriced model fails now, before anything is written
    # a tool that does not import, or one the start harness calls but was not given, fails
    # now, before anything is written
    tools = open_tools(config, live)
    check_tools_given(harness_source, tools)
    if full.edit_format == "function" and harness_source is not None:
        focus_targets(harness_source)  # a harness that is only a compiled graph: one line
    if stored is not None:
        if stored.to_json() != full.to_json():
            raise ConfigClash(f"{full.path} already holds a run with another config; "
                             "use `harness-learn resume` or a new --run-dir")
    else:
        run.path.mkdir(parents=True, exist_ok=True)
        store_inputs(full, harness_source)
        run.write_config(json.loads(full.to_json()))
    if keeps_copies(full):  # the run uses the copies kept in its directory: opened later
        return PreparedRun(full, live=live)
    return PreparedRun(full, task=task, tools=tools, live=live)


def with_split_secret(config: AdaptConfig, stored: AdaptConfig | None) -> AdaptConfig:
    """A reasoning-gym run's splits are seeded from a secret the parent keeps (in config.json,
    which no worker sees): the stored run's, else a fresh one. Public seeds would let harness
    code regenerate the problems with their gold (see `evals.reasoning_tasks`)."""
    from harness_learning.evals.reasoning_tasks import new_split_secret

    if not config.task.startswith("rg:") or "split_secret" in config.task_options:
        return config
    if stored is not None:  # a run's splits never change (one from before secrets keeps none)
        previous = stored.task_options.get("split_secret")
        if previous is None:
            return config
    else:
        previous = new_split_secret()
    options = {**config.task_options, "split_secret": previous}
    return config.replace(task_options=options)


def load_config(run_dir: str | Path | RunDir) -> AdaptConfig:
    """The config of the run in `run_dir` (errors name config.json)."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    data = run.read_config()
    data.setdefault("split", "paper")  # a run from before the choice drew the paper's way
    check_types(AdaptConfig, data, run.config)  # an edited or handed file: one line, not later
    try:
        config = AdaptConfig.from_dict(data)
    except (ValueError, TypeError) as exc:  # name the file
        raise ValueError(f"{run.config}: unreadable run config: {exc}") from exc
    config.run_dir = str(run.path)  # where it is now: it may be opened from another directory
    return config


def freeze_imports() -> None:
    """Take the objects the imports created (about 440k with litellm's) out of the garbage
    collector's scans. Each full collection otherwise walks all of them while thousands of
    model calls allocate: measured with `harness-learn bench round`, ~25% of the parent's CPU
    per call."""
    from harness_learning.harnesses.llm.litellm_loop import import_litellm

    import_litellm()
    gc.collect()
    gc.freeze()


async def run_adaptation(config: AdaptConfig, *, resume: bool = False,
                         on_update: OnUpdate | None = None,
                         context: AdapterContext | None = None,
                         answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run (or continue) the adapter until it stops; returns the final state. A run stopped
    at the approval gate returns with `PENDING` set to what the gate asks; continue it with
    `answer` ({"approve": bool, "reason": str}). A `context` given here (to override the task
    or a model) is entered and closed here, like one this function builds: the run owns its
    resources."""
    async with context or AdapterContext.from_config(config) as ctx:
        await ctx.aget("store")  # opening the log checks its schema: another version's? refused
        graph = build_adapter_graph(ctx)
        freeze_imports()
        run = RunDir.create(config.path)
        # beside the log; in PostgreSQL, locked against a second process on this run
        async with open_checkpointer(run, ctx.store, exclusive=True) as saver:
            app = graph.compile(checkpointer=saver)
            snapshot = await app.aget_state(THREAD)
            started = bool(snapshot.values)
            if started and not resume:
                raise ValueError(f"{config.path} already holds a started run: resume it instead")
            payload = Command(resume=answer) if answer is not None else (
                None if started else {})
            if started and answer is None:  # extended past its end (`extend`): a next round
                payload = reopen(config, snapshot) or payload
            try:
                async for chunk in run_spans(ctx, app.astream(payload, THREAD,
                                                              stream_mode="updates")):
                    for node, update in chunk.items():
                        if on_update is not None:
                            on_update(node, update if isinstance(update, dict) else {})
            except BudgetStop as stop:
                final = await budget_stopped(ctx, await app.aget_state(THREAD), stop)
                await keep_experience(ctx)
                return final
            snapshot = await app.aget_state(THREAD)
            asks = [i.value for task in snapshot.tasks for i in task.interrupts]
            if asks:
                return {**snapshot.values, PENDING: asks[0]}
            await keep_experience(ctx)
            return snapshot.values


def check_library(config: AdaptConfig) -> None:
    """Open the run's experience library, if it has one: a damaged file or a newer schema is
    one `LibraryError` line before the run starts (the library is left as it was)."""
    if config.experience:
        from harness_learning.harnesses.experience import Library

        Library(config.experience).close()


async def keep_experience(ctx: AdapterContext) -> None:
    """At the end of a run with `--experience`: add its judged changes to the library. A
    library that cannot take them is one warning line; the run's log keeps everything, and
    `harness-learn experience add RUN_DIR --to PATH` adds them later."""
    import asyncio
    import warnings

    cfg = ctx.config
    if not cfg.experience:
        return
    from harness_learning.graphs.adapter.experience import add_run
    from harness_learning.harnesses.experience import Library, LibraryError

    def write() -> tuple[int, int, list[str]]:
        with Library(cfg.experience) as lib:
            return (*add_run(lib, ctx.store, ctx.task, cfg), lib.skipped)

    try:
        written, withheld, skipped = await asyncio.to_thread(write)
    except LibraryError as exc:
        warnings.warn(f"the run's changes were not added to the experience library: {exc}; "
                      f"`harness-learn experience add {cfg.run_dir} --to PATH` adds them",
                      stacklevel=2)
        return
    await ctx.store.aappend_event("experience_written", {
        "library": str(cfg.experience), "entries": written, "withheld": withheld,
        "skipped": skipped[:20]})


async def budget_stopped(ctx: AdapterContext, snapshot: StateSnapshot, stop: BudgetStop
                         ) -> dict[str, Any]:
    """The final state of a run a budget stopped before an evaluation: what the checkpoints
    hold, with the stop's reason and the spend, logged as the run's end as `finish` would."""
    values = dict(snapshot.values)
    await ctx.store.aappend_event("run_finished", {"reason": stop.reason,
                                                   "current_sha": values.get("current_sha")})
    return {**values, "stop_reason": stop.reason, "spent": await ctx.store.aspent()}
