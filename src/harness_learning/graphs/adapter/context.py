"""The adapter's live resources: task, model clients, store, worker pool.

They are not graph state (not serialisable); they are rebuilt from the run's config when a
process starts or resumes, and shared by every node of that process. What is not given is
built from the config on first use (a Studio schema read starts no worker and no model); what
is given replaces it, at construction only: the resources are read-only attributes.

    async with AdapterContext.from_config(config, task=my_task, solver=my_model) as ctx:
        ...  # the pool and the store are closed on the way out

See docs/ARCHITECTURE.md, "Wiring".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness_learning.evals.problem import Problem
from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.inputs import open_task, open_tools
from harness_learning.harnesses.llm import ModelClient, ModelConfig, get_client
from harness_learning.harnesses.llm.ledger import Caps, SpendLedger
from harness_learning.harnesses.llm.models import resolve_role
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.sandbox import Limits, WorkerPool
from harness_learning.harnesses.store import LogStore
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning.harnesses.tracing import CallbackTracer, Tracer, tracer_for

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.trace_spans import RunSpans
    from harness_learning.harnesses.usertools import UserTools

Progress = Callable[[str, dict], None]
"""Called with ("problem", {...}) per finished evaluation and ("candidate", view)."""


def _no_progress(kind: str, data: dict) -> None:
    return None


class PlanningContext(Protocol):
    """The part of a run's context that planning a round reads (`few_shot`, `experience_search`):
    its settings, log, task and dev problems by id. `AdapterContext` is one; a test may hand
    a namespace holding just these four."""

    @property
    def config(self) -> AdaptConfig: ...

    @property
    def store(self) -> LogStore: ...

    @property
    def task(self) -> Task: ...

    @property
    def problems(self) -> dict[str, Problem]: ...


class AdapterContext:
    """What the adapter's nodes share. Build it with `from_config`; enter it with `async with`."""

    def __init__(self, config: AdaptConfig, *, task: Task | None = None,
                 store: LogStore | None = None, solver: ModelClient | None = None,
                 proposer: ModelClient | None = None, toolbox: Toolbox | None = None,
                 pool: WorkerPool | None = None, limits: Limits | None = None,
                 progress: Progress | None = None, live: dict[str, Any] | None = None,
                 user_tools: UserTools | None = None) -> None:
        self.config = config
        self.limits = limits or Limits()
        self.progress: Progress = progress or _no_progress
        self.live: dict[str, Any] = dict(live or {})
        """Python objects given to `adapt()` (a metric, tools) by their `live:NAME` in the config."""
        given = {"task": task, "store": store, "solver": solver, "proposer": proposer,
                 "toolbox": toolbox, "pool": pool, "user_tools": user_tools}
        self._made: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        self._problems: dict[str, Problem] | None = None
        self._evaluating: dict[tuple[str, str, int], asyncio.Lock] = {}
        self._closed = False
        self.logprobs_refused = False
        """The Proposer's endpoint refused log-prob parameters once: not asked again."""
        if toolbox is not None:
            self._budgeted(toolbox)

    def evaluation_lock(self, sha: str, purpose: str, round_: int) -> asyncio.Lock:
        """One lock per (version, purpose, round), the key of the log's results. Two identical
        candidates of a round then share one evaluation: the second reads what the first
        logged. Were both to run, which problems each ran, and so the Solver calls a run
        counts, would depend on timing."""
        return self._evaluating.setdefault((sha, purpose, round_), asyncio.Lock())

    @classmethod
    def from_config(cls, config: AdaptConfig, **overrides: Any) -> AdapterContext:
        """The context of `config`; `overrides` (task, store, solver, proposer, toolbox, pool,
        user_tools, limits, progress, live) replace what the config would build."""
        return cls(config, **overrides)

    async def __aenter__(self) -> AdapterContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close what was started: the worker pool, then the store. Resources are not
        rebuilt afterwards: a closed context refuses to hand them out."""
        self._closed = True
        toolbox = self._made.get("toolbox")
        if toolbox is not None and getattr(toolbox, "ledger", None) is self._made.get("ledger"):
            toolbox.ledger = None  # a toolbox given to the run outlives it, its budgets do not
        pool, store = self._made.pop("pool", None), self._made.pop("store", None)
        try:
            if pool is not None:
                await pool.close()
        finally:
            if store is not None:  # SQLite: off the event loop
                await asyncio.to_thread(store.close)

    async def ready(self) -> AdapterContext:
        """Build, in a worker thread, what a run's nodes use (task and its dev problems, store,
        Solver, toolbox, user tools, pool): opening files and SQLite, generating problems and
        loading an index never run on the event loop, which a server (`langgraph dev`) shares
        with every other run. Idempotent; the Proposer is built on first use (`aget`)."""
        if not all(self.started(n) for n in ("task", "store", "solver", "toolbox", "pool")) \
                or self._problems is None:
            await asyncio.to_thread(self._build_for_run)
        return self

    def _build_for_run(self) -> None:
        for name in ("task", "store", "solver", "user_tools", "toolbox", "pool"):
            getattr(self, name)
        _ = self.problems

    async def aget(self, name: str) -> Any:
        """Resource `name`, built in a worker thread the first time (see `ready`)."""
        if not self.started(name):
            await asyncio.to_thread(getattr, self, name)
        return getattr(self, name)

    def started(self, name: str) -> bool:
        """Whether resource `name` was given or built (not whether it is healthy)."""
        return name in self._made

    def _get(self, name: str, build: Callable[[], Any]) -> Any:
        if self._closed and name in ("store", "pool"):
            raise RuntimeError(f"the adapter context is closed: its {name} is gone "
                               f"(reopen the log with RunDir({str(self.config.path)!r}).open_store())")
        if name not in self._made:
            self._made[name] = build()
        return self._made[name]

    # -- the resources -----------------------------------------------------------------------
    @property
    def task(self) -> Task:
        return self._get("task", lambda: open_task(self.config, self.live))

    @property
    def user_tools(self) -> UserTools | None:
        """The user's own tools (None when the run has none); imported once, before any worker."""
        return self._get("user_tools", lambda: open_tools(self.config, self.live))

    @property
    def store(self) -> LogStore:
        """The run's log, where its config says (`store`: SQLite in the run directory unless
        a PostgreSQL URL is given)."""
        return self._get("store", lambda: RunDir.create(self.config.path).open_store(
            self.config.store or None))

    @property
    def solver(self) -> ModelClient:
        return self._get("solver", lambda: run_solver(self.config.solver, self.config.path))

    @property
    def proposer(self) -> ModelClient:
        """Plain `local` proposes with Qwen2.5-Coder-1.5B, which writes valid edits (SmolLM2,
        the Solver's `local`, does not). A local Proposer has a server of its own, also when
        the Solver is the same model. A run that collects GRPO groups (`group_size`) with
        log-probs on has it served with them, unless the spec says otherwise: offline GRPO
        takes its importance ratio against them."""
        return self._get("proposer", self._proposer_client)

    def _proposer_client(self) -> ModelClient:
        spec = ModelConfig.coerce(resolve_role(self.config.proposer, "proposer"))
        collects = self.config.group_size is not None and self.config.proposer_logprobs
        if collects and spec.is_local and spec.serve_logprobs is None:
            spec = spec.with_(serve_logprobs=True)
        return get_client(spec.with_(local_server="proposer"))

    @property
    def toolbox(self) -> Toolbox:
        """Serves the harnesses' tool calls; with a budget, every Solver call it makes
        reserves its share on `ledger` first (a toolbox given to the context too)."""
        return self._get("toolbox", lambda: self._budgeted(Toolbox(
            solver=self.solver, retriever=self.task.retriever(),
            solver_params=self.config.solver_params, user_tools=self.user_tools,
            tracer=self.tracer)))

    @property
    def ledger(self) -> SpendLedger | None:
        """The run's budgets held per Solver call (`harnesses.llm.ledger`, checked per
        evaluation by `budget`); None without one. It starts from what the log says was spent."""
        def make() -> SpendLedger | None:
            budget = self.config.budget
            caps = Caps(budget.solver_calls, budget.tokens, budget.cost_usd)
            return SpendLedger(caps, base=self._spent_before) if caps.limited else None
        return self._get("ledger", make)

    async def _spent_before(self) -> dict[str, Any]:
        """What the run spent before this process: the store's ledger, or more where a budget
        stop logged more (the calls of problems a cut left unstored were paid for too)."""
        spent = dict(await self.store.aspent())
        stops = await asyncio.to_thread(
            lambda: [e.payload for e in self.store.iter_events(kinds=["budget_stop"])])
        for stop in stops:
            logged = stop.get("spent") if isinstance(stop, Mapping) else None
            for key in ("solver_calls", "tokens", "cost_usd"):
                value = logged.get(key) if isinstance(logged, Mapping) else None
                if isinstance(value, int | float) and not isinstance(value, bool):
                    spent[key] = max(spent.get(key, 0) or 0, value)
        return spent

    def _budgeted(self, toolbox: Toolbox) -> Toolbox:
        """`toolbox` bound to this run's ledger, and to the Solver's price for a $ budget."""
        if not hasattr(toolbox, "ledger"):
            return toolbox
        toolbox.ledger = self.ledger
        solver_config = getattr(toolbox.solver, "config", None)
        if self.config.budget.cost_usd is not None and isinstance(solver_config, ModelConfig):
            from harness_learning.harnesses.llm.prices import price_of

            toolbox.solver_price = price_of(solver_config)
        return toolbox

    @property
    def tracer(self) -> Tracer | CallbackTracer | None:
        """The run's model-call tracer (`AdaptConfig.trace`, `harnesses.tracing`); None when
        off."""
        return self._get("tracer", lambda: tracer_for(self.config.trace))

    @property
    def spans(self) -> RunSpans | None:
        """The run's round and node spans (`trace_spans.RunSpans`) when it is traced with
        OpenTelemetry (LangGraph reports nodes to LangChain callbacks itself); else None."""
        from harness_learning.graphs.adapter.trace_spans import RunSpans

        return self._get("spans", lambda: RunSpans(self.tracer)
                         if isinstance(self.tracer, Tracer) else None)

    @property
    def pool(self) -> WorkerPool:
        """As many warm workers as a round has candidates: they start while the current version
        is evaluated, so the candidate fan-out finds them ready."""
        return self._get("pool", lambda: WorkerPool(size=max(2, self.config.candidates or 2),
                                                    limits=self.limits))

    @property
    def problems(self) -> dict[str, Problem]:
        """Every dev problem by id (test problems are never loaded by the loop)."""
        if self._problems is None:
            self._problems = {p.id: p for p in self.task.dev()}
        return self._problems

    def dev_problems(self, ids: list[str]) -> list[Problem]:
        return [self.problems[i] for i in ids]


def run_solver(spec: str | ModelConfig, run_dir: Path) -> ModelClient:
    """The Solver of a run, with one response cache per run directory (unless the spec names
    one): identical deterministic calls of different candidates and rounds, and of a resumed
    run, are made once."""
    config = ModelConfig.coerce(spec)
    if config.cache is None:
        config = config.with_(cache=str(RunDir(run_dir).solver_cache))
    return get_client(config)
