"""The served harness graph: the harness's own nodes and edges, its code still in the sandbox.

The worker compiles the harness and reports its shape (`harnesses.sandbox.graph_shape`). Here
a mirror `StateGraph` is built with the same node names, edges and branches, but its nodes run
no harness code: each run starts the harness in the sandbox (`MirrorRun`), the worker streams
the state after every superstep, and each mirror node waits for its step and returns the keys
its node wrote, with their values after that step (for a key with a reducer, the reduced
value). Branches follow the path the sandbox took (its next step's nodes), so `stream_mode=
"updates"`/`"values"` and Studio show the run node by node, and `get_graph()` draws the
harness. The caller's RunnableConfig reaches the run: its recursion limit (enforced in the
sandbox), tags and metadata; its callbacks see each Solver and tool call, under the node that
made it (`graphs.serving.harness_callbacks`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph.state import CompiledStateGraph, StateGraph
from langgraph.types import Command

from harness_learning.graphs.serving.harness_callbacks import traced_tool_call
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.sandbox.graph_shape import END, START, GraphShape
from harness_learning.harnesses.sandbox.problem_run import RunObserver
from harness_learning.harnesses.sandbox.records import ToolReply

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel

SESSION_KEY = "__harness_mirror_run"
RESERVED = frozenset({"calls", "latency_s", "version", "fields"})
"""Keys of the served graph's own output; a harness key of the same name is not mirrored."""

Finish = Callable[[ProblemResult], dict[str, Any]]
"""What the last mirror node adds to its output from the sandbox's outcome (the answer, the
calls): `graphs.serving.embed` says which keys."""
Update = Command | dict[str, Any]
"""What a mirror node returns: its keys, and a `Command` when it routes on."""
K = TypeVar("K", int, tuple[int, str])


class HarnessRunner(Protocol):
    """What runs a served harness (`graphs.serving.embed.SandboxedHarness`): a warm sandbox
    worker with the source loaded, started once per run, streaming to the run's observer."""

    model: str

    def start(self, inputs: dict[str, Any], observer: RunObserver) -> Future[ProblemResult]: ...

    def shape(self) -> GraphShape: ...

    def close(self) -> None: ...


class Serving(Protocol):
    """What a `ServedHarness` serves (`graphs.serving.served_harness.Served`): it starts each
    run, stops it, and gives the inputs as a pydantic model for `as_tool`."""

    runner: HarnessRunner

    def begin(self, given: object, config: RunnableConfig | None,
              loop: asyncio.AbstractEventLoop | None = None
              ) -> tuple[MirrorRun, RunnableConfig]: ...

    def end(self, run: MirrorRun) -> None: ...

    def tool_schema(self) -> type[BaseModel]: ...


def newest(_old: object, new: object) -> object:
    """Mirror channels take the sandbox's value as it is (its reducers already ran there)."""
    return new


class HarnessRunError(RuntimeError):
    """The harness produced no answer: its own fault, a timeout, or the model was unreachable."""

    def __init__(self, kind: str, error: str, traceback: str | None = None) -> None:
        tail = f"\n{traceback}" if traceback else ""
        super().__init__(f"harness run failed ({kind}): {error}{tail}")
        self.kind, self.error, self.traceback = kind, error, traceback


class MirrorError(RuntimeError):
    """The mirror and the sandbox disagree on the path (a worker sent an impossible step)."""


class MirrorRun:
    """One served run: its steps as the worker reports them, waited for by the mirror's nodes.
    It is the worker's `RunObserver`; its methods run on the sandbox's event loop, the mirror's
    nodes on the caller's, so everything is handed over through thread-safe futures."""

    def __init__(self, shape: GraphShape, config: RunnableConfig, model: str,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.shape, self.model = shape, model
        self.caller = (config, loop)
        """Where calls outside any node are reported: the caller's config, and the event
        loop its callbacks belong to (None: a sync caller's)."""
        self.config = {"recursion_limit": config.get("recursion_limit", 25),
                       "tags": list(config.get("tags") or []),
                       "metadata": {k: v for k, v in (config.get("metadata") or {}).items()
                                    if isinstance(v, str | int | float | bool)}}
        """What the worker's run gets of the caller's config."""
        self.result: Future = Future()
        """The sandbox's `ProblemResult`, once its run is over."""
        self.task: Future[ProblemResult] | None = None
        """The sandbox's run in flight (a concurrent future; cancelling it stops the run)."""
        self._lock = threading.Lock()
        self._steps: dict[int, Future] = {}
        self._nodes: dict[tuple[int, str], Future] = {}
        self._base: int | None = None
        self._last: int | None = None
        """The last step the worker reported (0: its input)."""

    # -- the worker's side (RunObserver) ---------------------------------------------------

    def step(self, message: dict[str, Any]) -> None:
        """The worker finished a step; only the next one in order is taken."""
        step = message.get("step")
        if step == (0 if self._last is None else self._last + 1) and not isinstance(step, bool):
            self._last = step
            future = self._future(self._steps, step)
            if not future.done():
                future.set_result(message)

    async def tool_call(self, tool: str, args: dict[str, Any], node: object,
                        call: Awaitable[ToolReply]) -> ToolReply:
        """Make the call under the mirror node that stands for `node` in the step running now,
        so the caller's callbacks nest it there. That step is the one after the last reported:
        the worker reports a step before it starts the next, on the same ordered bridge. The
        wait for the mirror node to start ends when it does or when the run ends."""
        where = self.caller
        if isinstance(node, str) and node in self.shape.nodes:
            step = 0 if self._last is None else self._last + 1
            where = await asyncio.wrap_future(self._future(self._nodes, (step, node))) or where
        return await traced_tool_call(*where, self.model, tool, args, call)

    def finished(self) -> None:
        """The worker's run is over: steps that never came, and nodes that never ran, are
        released (with None), so nothing waits on them."""
        with self._lock:
            pending = [*self._steps.values(), *self._nodes.values()]
        for future in pending:
            if not future.done():
                future.set_result(None)

    # -- the mirror's side -----------------------------------------------------------------

    def _future(self, table: dict[K, Future], key: K) -> Future:
        with self._lock:
            future = table.get(key)
            if future is None:
                future = table[key] = Future()
                if self.result.done():
                    future.set_result(None)
            return future

    def relative(self, config: RunnableConfig) -> int:
        """The sandbox's step number (1 for the first nodes) of the mirror's current step."""
        step = int((config.get("metadata") or {}).get("langgraph_step", 0))
        with self._lock:
            if self._base is None:
                self._base = step
            return step - self._base + 1

    def started(self, step: int, name: str, config: RunnableConfig,
                loop: asyncio.AbstractEventLoop | None = None) -> Future:
        """Node `name` runs for `step`: its calls nest under `config` (their callbacks run on
        `loop`, the node's own, if it has one); its step's future."""
        future = self._future(self._nodes, (step, name))
        if not future.done():
            future.set_result((config, loop))
        return self._future(self._steps, step)

    def update(self, name: str, step: int, message: dict[str, Any] | None
               ) -> tuple[dict[str, Any], list[str], bool]:
        """What mirror node `name` returns for sandbox step `step` (`message`)."""
        if message is None:
            raise self._failure(f"node {name!r} (step {step})")
        names = [t[0] for t in message.get("tasks") or [] if isinstance(t, list) and t]
        if name not in names:
            raise MirrorError(f"the sandbox ran {names} at step {step}, not {name!r}")
        values = message.get("values") if isinstance(message.get("values"), dict) else {}
        keys = {k for t in message["tasks"] if t and t[0] == name and len(t) > 1
                and isinstance(t[1], list) for k in t[1] if isinstance(k, str)}
        out = {k: values[k] for k in sorted(keys) if k in values and k not in RESERVED}
        following = [n for n in message.get("next") or [] if n in self.shape.nodes]
        goto = [n for n in following if n in self.shape.destinations.get(name, ())]
        if name == min(names):  # nodes reached by an undeclared Command or Send, if any
            expected = set().union(*(self.shape.targets(n) for n in names))
            goto += [n for n in following if n not in expected and n not in goto]
        return (out, goto, not following)

    def route(self, source: str, ends: tuple[str, ...] | None, message: dict | None
              ) -> str | list[str]:
        """Where a branch of `source` went: its ends among the sandbox's next nodes."""
        following = list((message or {}).get("next") or [])
        allowed = set(self.shape.nodes) | {END} if ends is None else set(ends)
        hits = sorted({n for n in following if n in allowed})
        if not following and END in allowed:
            return END
        return hits

    def _failure(self, where: str) -> Exception:
        outcome = self.result.result() if self.result.done() else None
        if outcome is None or outcome.answer is not None:
            return MirrorError(f"the sandbox's run has no step for {where}")
        return HarnessRunError(outcome.error_kind or "harness", outcome.error or "no answer",
                               outcome.traceback)


def run_of(config: RunnableConfig) -> MirrorRun:
    run = (config.get("configurable") or {}).get(SESSION_KEY)
    if not isinstance(run, MirrorRun):
        raise MirrorError("a mirror node ran outside its served graph's run")
    return run


def node(name: str, finish: Finish) -> RunnableLambda:
    """Mirror node `name`: waits for its step, returns what it wrote (and, on the last step,
    `finish(outcome)`: the answer and trace), routing on where the sandbox went next."""

    def reply(run: MirrorRun, step: int, message: dict[str, Any] | None,
              outcome: ProblemResult | None = None) -> Update:
        out, goto, last = run.update(name, step, message)
        if last:
            out.update(finish(outcome))
        return Command(update=out, goto=goto) if goto else out

    def run_sync(state: object, config: RunnableConfig) -> Update:
        run = run_of(config)
        step = run.relative(config)
        message = run.started(step, name, config).result()
        last = message is not None and not message.get("next")
        return reply(run, step, message, run.result.result() if last else None)

    async def run_async(state: object, config: RunnableConfig) -> Update:
        run = run_of(config)
        step = run.relative(config)
        message = await asyncio.wrap_future(
            run.started(step, name, config, asyncio.get_running_loop()))
        last = message is not None and not message.get("next")
        return reply(run, step, message, await asyncio.wrap_future(run.result) if last else None)

    return RunnableLambda(run_sync, afunc=run_async, name=name)


def router(source: str, ends: tuple[str, ...] | None) -> RunnableLambda:
    """A branch of `source`: the sandbox's next nodes among its ends (from START: the
    first step's nodes, reported as soon as the sandbox's run begins)."""

    def future(config: RunnableConfig) -> tuple[MirrorRun, Future]:
        run = run_of(config)
        step = 0 if source == START else run.relative(config)
        return run, run._future(run._steps, step)

    def pick_sync(state: object, config: RunnableConfig) -> str | list[str]:
        run, message = future(config)
        return run.route(source, ends, message.result())

    async def pick_async(state: object, config: RunnableConfig) -> str | list[str]:
        run, message = future(config)
        return run.route(source, ends, await asyncio.wrap_future(message))

    return RunnableLambda(pick_sync, afunc=pick_async, name=f"route_{source.strip('_')}")


def mirror_graph(shape: GraphShape, state: type, input_schema: type, output_schema: type,
                 finish: Finish) -> StateGraph:
    """A StateGraph with the harness's nodes, edges, waiting edges and branches."""
    graph = StateGraph(state, input_schema=input_schema, output_schema=output_schema)
    for name in shape.nodes:
        graph.add_node(name, node(name, finish), defer=name in shape.deferred,
                       destinations=shape.destinations.get(name) or None)
    for start, end in shape.edges:
        graph.add_edge(start, end)
    for starts, end in shape.waiting:
        graph.add_edge(list(starts), end)
    for source, ends in shape.branches:
        graph.add_conditional_edges(source, router(source, ends),
                                    None if ends is None else list(ends))
    return graph


class ServedHarness(CompiledStateGraph):
    """The compiled mirror graph; every run (invoke, stream, batch, astream_events, as a
    subgraph) starts the harness in the sandbox first. `harness` holds what it serves."""

    def __init__(self, *, harness: Serving | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.harness = harness

    @property
    def harness_runner(self) -> HarnessRunner:
        """The sandboxed runner (`close()` it to stop its warm worker early)."""
        return self.harness.runner

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
               ) -> Iterator[Any]:
        run, config = self.harness.begin(input, config)
        try:
            yield from super().stream(input, config, **kwargs)
        finally:
            self.harness.end(run)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
                      ) -> AsyncIterator[Any]:
        run, config = self.harness.begin(input, config, asyncio.get_running_loop())
        try:
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk
        finally:
            self.harness.end(run)

    def as_tool(self, *, name: str | None = None, description: str | None = None,
                **kwargs: Any) -> StructuredTool:
        """A tool whose content is the answer and whose artifact is the whole output (the
        trace included): `response_format="content_and_artifact"`."""
        from langchain_core.tools import StructuredTool

        def run(**args: object) -> tuple[str, dict[str, Any]]:
            out = self.invoke(args)
            return out["answer"], out

        async def arun(**args: object) -> tuple[str, dict[str, Any]]:
            out = await self.ainvoke(args)
            return out["answer"], out

        return StructuredTool(name=name or self.name, description=description or (
            f"Answer a question with the {self.name} harness."), args_schema=self.harness.tool_schema(),
            func=run, coroutine=arun, response_format="content_and_artifact", **kwargs)

