"""The adapter as a server serves it (`langgraph dev`, Studio, `langgraph_sdk`): one thread is
one adaptation run, and the thread keeps its settings.

A thread's first run is given settings (`context`, typed by `AdapterSettings`; `configurable`
works too, the server mirrors it); they become the run's `AdaptConfig`, whose `prepare` writes
`config.json` into the run directory, and the `init` node records that directory in the
thread's state (`run_dir`). Every later run of the thread (an approval's `Command(resume=...)`,
a continuation after a crash) reopens the run from there, like `harness-learn resume` does: no
setting needs repeating, and settings that contradict the stored ones are refused with the
differences named, instead of silently starting another run. Reading a thread's state opens
nothing (the graph's shape does not depend on settings).

`harness-learn studio --settings FILE.toml` gives every new thread a settings file (`adapt
--config`'s format, `graphs.adapter.config_file`): the fields' defaults < the file < the
settings a thread's first run is given.

Where things live: the server (`langgraph dev`: its own files under `.langgraph_api`; the
licensed server: its PostgreSQL) keeps the threads, their runs and the thread checkpoints, as
for any graph it serves; the run's execution log is the adapter's, kept where the thread's
settings say (`store`: log.sqlite in the run directory, or a postgresql://... database, one
schema per run, named by the run directory's store.json). A PostgreSQL run is held with the
same per-run advisory lock `adapt` and `resume` take (`graphs.adapter.checkpoints`) for as long
as a server run drives it, so a command line process and a thread never drive one run at once.
A log store that cannot be opened fails the thread's run with its one line (`ServedRunError`).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.context_schema import (
    DEFAULT_TASK,
    config_values,
    conflicts,
    given_settings,
)
from harness_learning.graphs.adapter.prepared import PreparedRun
from harness_learning.harnesses.store import LogStoreError

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

RUNS_ENV = "HARNESS_LEARNING_STUDIO_RUNS"
CONFIG_ENV = "HARNESS_LEARNING_STUDIO_CONFIG"
"""A settings file (TOML) under every new thread's settings (set by `studio --settings`)."""


def studio_runs_root() -> Path:
    """Where threads without a `run_dir` keep their run (default: ~/.cache, outside the tree,
    since a `.py` file written under the project would reload the dev server)."""
    value = os.environ.get(RUNS_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "harness-learning" / "studio-runs"


def thread_run_dir(thread_id: str | None) -> Path:
    """The run directory of a thread whose settings name none."""
    thread = re.sub(r"[^A-Za-z0-9_.-]", "_", str(thread_id or "default"))
    return studio_runs_root() / thread


def settings_config(settings: Mapping[str, Any], thread_id: str | None = None) -> AdaptConfig:
    """The `AdaptConfig` that settings describe (over the server's settings file, if any), with
    the track's defaults filled (a task of one's own is opened to learn its track). Blocking:
    it may read files."""
    from harness_learning.evals.registry import track_of
    from harness_learning.graphs.adapter.inputs import open_task

    values = config_values(dict(settings))
    if os.environ.get(CONFIG_ENV):
        from harness_learning.graphs.adapter.config_file import over_file, read_config_file

        values = over_file(values, read_config_file(os.environ[CONFIG_ENV]), dict(settings))
    values.setdefault("task", DEFAULT_TASK)
    values.setdefault("run_dir", str(thread_run_dir(thread_id)))
    base = AdaptConfig(**values)
    return base.with_track_defaults(track_of(base.task, base.task_options)
                                    or open_task(base).track)


def thread_config(run_dir: str | None, settings: Mapping[str, Any],
                  thread_id: str | None) -> PreparedRun:
    """A thread's run: the stored one once the thread has started (`run_dir` in its state),
    else the one its settings describe, prepared (config.json written).
    Blocking: call it in a thread."""
    from harness_learning.graphs.adapter.run import load_config, prepare
    from harness_learning.harnesses.experience import give_location
    from harness_learning.harnesses.store.pgurl import give

    if settings.get("store"):  # typed into Studio: the user's word, as `--store` is
        give(str(settings["store"]))
    if settings.get("experience"):  # likewise a postgresql:// experience library
        give_location(str(settings["experience"]))
    if run_dir:
        stored = load_config(run_dir)
        clash = conflicts(dict(settings), stored)
        if clash:
            raise ValueError(f"this thread's run ({run_dir}) has other settings: "
                             f"{'; '.join(clash)}. A thread keeps its settings: continue it "
                             "without them, or start a new thread")
        return PreparedRun(stored)
    return prepare(settings_config(settings, thread_id))


class ServedRunError(RuntimeError):
    """A thread's run that cannot start, with the one line saying why. The server shows the
    message of builtin errors only (others read "An internal error occurred"), so a log
    store's refusal (unreachable, locked, another schema version) is re-raised as this."""


class ThreadRun:
    """The context source of one server run (`graphs.adapter.graph.ContextSource`): opens the
    thread's run on the first node that needs it, off the event loop, and closes it with
    `aclose` (the worker pool and the store)."""

    def __init__(self, thread_id: str | None, given: Mapping[str, Any] | None = None) -> None:
        """`given`: the settings as the request gave them, where the server filtered the
        graph's own context (see `graphs.serving.studio.adapter`)."""
        self.thread_id = thread_id
        self.given = given
        self._ctx: AdapterContext | None = None
        self._lock = asyncio.Lock()
        self._held = AsyncExitStack()

    async def __call__(self, state: Mapping[str, Any], runtime: Runtime | None
                       ) -> AdapterContext:
        if self._ctx is None:
            async with self._lock:
                if self._ctx is None:
                    settings = given_settings(self.given if self.given is not None
                                              else getattr(runtime, "context", None))
                    run = await asyncio.to_thread(thread_config, state.get("run_dir"),
                                                  settings, self.thread_id)
                    self._ctx = await self._open(run.context())
        return self._ctx

    async def _open(self, ctx: AdapterContext) -> AdapterContext:
        """The context with its log open first (a database that does not answer fails the run
        before a task is built) and, for a PostgreSQL log, the run's lock held until `aclose`."""
        from harness_learning.graphs.adapter.checkpoints import open_checkpointer
        from harness_learning.harnesses.rundir import RunDir
        from harness_learning.harnesses.store.postgres import PostgresLogStore

        try:
            store = await ctx.aget("store")
            if isinstance(store, PostgresLogStore):
                await self._held.enter_async_context(
                    open_checkpointer(RunDir(ctx.config.path), store, exclusive=True))
        except LogStoreError as exc:
            await self._held.aclose()
            await ctx.aclose()
            raise ServedRunError(str(exc)) from exc
        return ctx

    async def aclose(self) -> None:
        try:
            await self._held.aclose()
        finally:
            if self._ctx is not None:
                await self._ctx.aclose()

    async def __aenter__(self) -> ThreadRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
