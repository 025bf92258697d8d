"""Embed a harness in your own app: `load_harness(...)` returns a compiled LangGraph graph.

    from harness_learning.graphs.serving.embed import load_harness
    harness = load_harness("runs/rg-arith")            # the run's current version, sandboxed
    harness.invoke({"question": "What is 3 + 4?"}, {"callbacks": [tracer]})  # {"answer": "7", ...}
    chain = prompt | to_question | harness | pick_answer   # LCEL; or add it as a subgraph node
    tool = harness.as_tool(name="solve", description="...")  # content: the answer; artifact: all

A harness an LLM wrote is untrusted, so by default it runs inside a sandbox worker (the same
`harnesses.sandbox.Worker` the adapter uses) behind a mirror graph with the harness's own nodes
and edges, read from the graph compiled in the worker (`graphs.serving.mirror`): each node shows the
state its harness node left, as the worker streams it. The worker's tool calls come back over
the bridge to a `Toolbox` in this process, which owns the model client, and are reported to
the RunnableConfig's callbacks. The source is never executed here. Running in process needs
an explicit `sandboxed=False, reviewed=True`: only for code a person has read.

Workers live on one background event loop (the model layer's), so a graph built here can be
called from sync code, from any event loop, and concurrently; the loaded worker is reused
across calls and restarted when it dies or has been idle for `IDLE_CLOSE_S`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import hashlib
import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.graphs.serving.harness_source import (
    HarnessSource,
    OpenedHarness,
    TaskRef,
    open_harness,
    resolve_harness,
)
from harness_learning.graphs.serving.mirror import HarnessRunError, ServedHarness
from harness_learning.graphs.serving.served_harness import HarnessInputError, HarnessOutput
from harness_learning.harnesses.compiler import HarnessInvalid, check_source
from harness_learning.harnesses.contract import LINE_LIMIT
from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.sandbox import Limits, Worker
from harness_learning.harnesses.sandbox.graph_shape import GraphShape, check_shape

if TYPE_CHECKING:
    from langgraph.pregel import Pregel

    from harness_learning.evals.task import Task
    from harness_learning.harnesses.sandbox.problem_run import RunObserver
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning.harnesses.usertools import UserTools

IDLE_CLOSE_S = 300.0
"""A warm worker nobody used for this long is closed (the next call starts a fresh one)."""
TRACE_CHARS = 2_000
"""Longest tool argument or result kept in a run's `calls` (the full trace is the bridge's)."""


# -- the sandboxed runner --------------------------------------------------------------------

def _loop() -> asyncio.AbstractEventLoop:
    from harness_learning.harnesses.llm.litellm_loop import background_loop

    global _exit_hook
    loop = background_loop().loop
    if not _exit_hook:  # registered after the loop's own hook, so it runs first (LIFO)
        atexit.register(_close_all)
        _exit_hook = True
    return loop


_exit_hook = False


class SandboxedHarness:
    """One harness source served from a warm sandbox worker on the background loop."""

    def __init__(self, source: str, *, model: str = "local", task: TaskRef = None,
                 limits: Limits | None = None, line_limit: int = LINE_LIMIT,
                 solver_params: dict[str, Any] | None = None,
                 user_tools: UserTools | None = None) -> None:
        check_source(source, line_limit)  # static: a broken file fails here, naming the line
        self.source, self.model, self.task_ref = source, model, task
        self.user_tools = user_tools
        self.limits, self.line_limit = limits or Limits(), line_limit
        self.solver_params = dict(solver_params or {})
        self._worker: Worker | None = None
        self._lock: asyncio.Lock | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._ids = itertools.count(1)
        self._busy = 0
        self._shape: GraphShape | None = None
        _LIVE.add(self)

    def toolbox(self) -> Toolbox:
        return make_toolbox(self.model, self.task_ref, self.solver_params, self.user_tools)

    async def _arun(self, inputs: dict[str, Any], observer: RunObserver | None = None
                    ) -> ProblemResult:
        async with self._using():
            try:
                worker = await self._warm()
            except HarnessInvalid as exc:  # compiling it failed inside the worker
                return ProblemResult.refused(exc)
            except RuntimeError as exc:  # the sandbox itself did not start
                return ProblemResult(error=str(exc), error_kind=ErrorKind.INFRA)
            return await worker.run(f"q{next(self._ids)}", inputs, self.limits.problem_timeout_s,
                                    observer=observer)

    async def _ashape(self) -> GraphShape:
        async with self._using():
            if self._shape is None:
                self._shape = check_shape((await self._warm()).shape)
            return self._shape

    @contextlib.asynccontextmanager
    async def _using(self) -> AsyncIterator[None]:
        """Keeps the warm worker from its idle close while in use."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0 and self._worker is not None:
                self._idle = asyncio.get_running_loop().call_later(IDLE_CLOSE_S, self._on_idle)

    async def _warm(self) -> Worker:
        """The live worker with the source loaded (started, or restarted, if need be)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            if self._worker is None or not self._worker.alive:
                await self._start()
            return self._worker

    async def _start(self) -> None:
        if self._worker is not None:
            await self._worker.close()
            self._worker = None
        worker = Worker(await asyncio.to_thread(self.toolbox), self.limits)
        await worker.start()
        try:
            await worker.load(self.source, self.line_limit)
        except BaseException:
            await worker.close()
            raise
        self._worker = worker

    def _on_idle(self) -> None:
        if self._busy == 0:
            asyncio.ensure_future(self.aclose())

    async def arun(self, inputs: dict[str, Any]) -> ProblemResult:
        """Run one problem in the worker (from any event loop)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._arun(inputs), _loop()))

    def run(self, inputs: dict[str, Any]) -> ProblemResult:
        return asyncio.run_coroutine_threadsafe(self._arun(inputs), _loop()).result()

    def start(self, inputs: dict[str, Any], observer: RunObserver
              ) -> concurrent.futures.Future[ProblemResult]:
        """Start one served run (streamed to `observer`); its `ProblemResult` future."""
        return asyncio.run_coroutine_threadsafe(self._arun(inputs, observer), _loop())

    def shape(self) -> GraphShape:
        """The harness graph's shape, as the worker that compiled it reports it (starting the
        worker if none is warm; `HarnessInvalid` if the source does not build)."""
        return asyncio.run_coroutine_threadsafe(self._ashape(), _loop()).result()

    async def aclose(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.close()

    def close(self) -> None:
        """Stop the warm worker (it also stops by itself when idle or when this process exits)."""
        if self._worker is None:
            return
        loop = _loop()
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout=30)
        elif self._worker.process is not None:  # at exit, after the loop stopped
            self._worker.process.kill()


_LIVE: weakref.WeakSet[SandboxedHarness] = weakref.WeakSet()


def _close_all() -> None:
    for harness in list(_LIVE):
        with contextlib.suppress(Exception):  # exiting anyway; workers die with their parent
            harness.close()


def make_toolbox(model: str = "local", task: TaskRef = None,
                 solver_params: dict[str, Any] | None = None,
                 user_tools: UserTools | None = None) -> Toolbox:
    """The parent-side tools: the shared client of `model` (with `solver_params` as its
    defaults), the retriever of `task` (a name, {"name", "options"}, a Task, or None) and the
    user's tools (a `UserTools`, or None)."""
    from harness_learning.harnesses.llm import get_client
    from harness_learning.harnesses.toolbox import Toolbox

    task = _task(task)
    return Toolbox(solver=get_client(model), solver_params=solver_params,
                   retriever=task.retriever() if task is not None else None,
                   user_tools=user_tools)


def _task(task: TaskRef) -> Task | None:
    if task is None or not isinstance(task, str | dict):
        return task
    from harness_learning.evals.registry import get_task

    if isinstance(task, dict):
        return get_task(task["name"], **task.get("options", {}))
    return get_task(task)


def _output(outcome: ProblemResult, version: str) -> dict[str, Any]:
    if outcome.answer is None:
        raise HarnessRunError(outcome.error_kind or "harness", outcome.error or "no answer",
                              outcome.traceback)
    calls = [{"tool": c.tool, "args": _trim(c.args), "result": _trim(c.result), "error": c.error,
              "latency_s": round(c.latency_s, 4), "tokens": c.tokens} for c in outcome.calls]
    return {"answer": outcome.answer, "calls": calls, "latency_s": round(outcome.latency_s, 4),
            "version": version}


def _trim(value: object) -> object:
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= TRACE_CHARS:
        return value
    return text[:TRACE_CHARS] + f"... [{len(text) - TRACE_CHARS} more chars]"


def served_graph(runner: SandboxedHarness, name: str = "harness", version: str = "",
                 with_fields: bool = False) -> ServedHarness:
    """The harness's own graph, mirrored (see `graphs.serving.mirror`): its nodes run in the worker.
    `with_fields`: the input also takes `fields`, more public inputs for the sandbox."""
    from harness_learning.graphs.serving.served_harness import served_graph as build

    version = version or hashlib.sha256(runner.source.encode()).hexdigest()[:12]
    return build(runner, name, version, with_fields, lambda outcome: _output(outcome, version))


_shared: OrderedDict[tuple, SandboxedHarness] = OrderedDict()
SHARED_RUNNERS = 8


def shared_runner(opened: OpenedHarness) -> SandboxedHarness:
    """One warm runner per (source, Solver, task, user tools) for servers and tools that are
    asked for the same harness again and again; the least recently used beyond
    `SHARED_RUNNERS` is closed."""
    key = (opened.found.source, opened.model, repr(opened.task), opened.tools_key)
    with _shared_lock:
        runner = _shared.pop(key, None) or SandboxedHarness(
            opened.found.source, model=opened.model, task=opened.task,
            user_tools=opened.user_tools())
        _shared[key] = runner
        evicted = [_shared.popitem(last=False)[1] for _ in range(len(_shared) - SHARED_RUNNERS)]
    for old in evicted:
        old.close()
    return runner


_shared_lock = threading.Lock()


def serve(harness: str | Path, *, model: str | None = None, task: TaskRef = None,
          version: str = "current", name: str = "harness") -> ServedHarness:
    """`load_harness` (sandboxed) for servers: `harness` is opened again on each call (a run
    directory's current version may have changed), and the warm worker of an unchanged
    source, Solver, task and tool set is reused."""
    opened = open_harness(harness, model=model, task=task, version=version)
    return served_graph(shared_runner(opened), name=name, version=opened.found.sha[:12],
                        with_fields=opened.with_fields)


# -- in process (reviewed code only): see `graphs.serving.inprocess` ---------------------------------


def load_harness(harness: str | Path, *, sandboxed: bool = True, reviewed: bool = False,
                 model: str | None = None, task: TaskRef = None, version: str = "current",
                 limits: Limits | None = None, line_limit: int = LINE_LIMIT,
                 solver_params: dict[str, Any] | None = None, name: str = "harness",
                 tools: object = None, strict_tools: bool = False
                 ) -> ServedHarness | Pregel:
    """A compiled graph running `harness` (a seed name, a .py file, or a run directory).

    `model`: the Solver (default: the run's Solver for a run directory, else `local`).
    `task`: a task name or `Task` whose retriever backs `tools.search` (default: the run's task
    for a run directory, else none). `tools`: your tools for `tools.call`: tool objects or
    references as `--tools` takes them (`"mcp:python3 server.py"`, `"file.py:attr"`); default:
    a run directory's own, re-imported. A harness calling a tool it is not given warns
    (`UserWarning`), or with `strict_tools=True` raises `ToolSetupError`, naming the tool.
    In process only with `sandboxed=False, reviewed=True`."""
    opened = open_harness(harness, model=model, task=task, version=version, tools=tools)
    found = opened.found
    user_tools = opened.user_tools()
    _check_tools(found, user_tools, strict_tools)
    if not sandboxed:
        if not reviewed:
            raise PermissionError(
                f"refusing to run {found.origin} in this process: harness code may have been "
                "written by a model. Keep sandboxed=True, or pass reviewed=True once a person "
                "has read it")
        from harness_learning.graphs.serving.inprocess import InProcessTools
        from harness_learning.harnesses.compiler import compile_harness

        in_process = InProcessTools(make_toolbox(opened.model, opened.task, solver_params,
                                                 user_tools))
        return compile_harness(found.source, in_process, line_limit, trusted=True,
                               filename=f"<harness {found.sha[:12]}>")
    runner = SandboxedHarness(found.source, model=opened.model, task=opened.task,
                              limits=limits, line_limit=line_limit, solver_params=solver_params,
                              user_tools=user_tools)
    return served_graph(runner, name=name, version=found.sha[:12],
                        with_fields=opened.with_fields)


def _check_tools(found: HarnessSource, user_tools: UserTools | None, strict: bool) -> None:
    """Warn (or, `strict`, refuse) when the harness calls tools it was not given: it would
    otherwise fail on each call, or run an agent with no tools, without a word."""
    import warnings

    from harness_learning.harnesses.usertools import (
        ToolSetupError,
        missing_tools,
        missing_tools_message,
    )

    missing = missing_tools(found.source, user_tools)
    if not missing:
        return
    message = (f"{found.origin}: {missing_tools_message(missing, user_tools)}"
               .replace("with --tools", "with tools=[...]"))
    if strict:
        raise ToolSetupError(message)
    warnings.warn(message + " (strict_tools=True refuses it)", UserWarning, stacklevel=3)


__all__ = ["HarnessInputError", "HarnessOutput", "HarnessRunError", "HarnessSource",
           "SandboxedHarness", "load_harness", "make_toolbox", "resolve_harness", "serve",
           "served_graph", "shared_runner"]
