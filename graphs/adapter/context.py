"""The adapter's live resources: task, model clients, store, worker pool.

They are not graph state (not serialisable); they are rebuilt from the run's config when a
process starts or resumes, and shared by every node of that process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.inputs import open_task, open_tools
from harness_learning.harnesses.llm import ModelClient, ModelConfig, get_client
from harness_learning.harnesses.llm.models import resolve_role
from harness_learning.harnesses.sandbox import Limits, WorkerPool
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.harnesses.toolbox import Toolbox

SOLVER_CACHE = "solver_cache.sqlite"


@dataclass
class AdapterContext:
    config: AdaptConfig
    limits: Limits = field(default_factory=Limits)
    progress: Callable[[str, dict], None] = field(default=lambda kind, data: None)
    """Called with ("problem", {...}) per finished evaluation and ("candidate", view)."""
    live: dict[str, Any] = field(default_factory=dict)
    """Python objects given to `adapt()` (a metric, tools) by their `live:NAME` in the config."""

    @cached_property
    def task(self) -> Task:
        return open_task(self.config, self.live)

    @cached_property
    def user_tools(self) -> Any:
        """The user's own tools (None when the run has none); imported once, before any worker."""
        return open_tools(self.config, self.live)

    @cached_property
    def store(self) -> SQLiteLogStore:
        self.config.path.mkdir(parents=True, exist_ok=True)
        return SQLiteLogStore(self.config.path)

    @cached_property
    def solver(self) -> ModelClient:
        return run_solver(self.config.solver, self.config.path)

    @cached_property
    def proposer(self) -> ModelClient:
        """Plain `local` proposes with Qwen2.5-Coder-1.5B, which writes valid edits (SmolLM2,
        the Solver's `local`, does not)."""
        return get_client(resolve_role(self.config.proposer, "proposer"))

    @cached_property
    def toolbox(self) -> Toolbox:
        return Toolbox(solver=self.solver, retriever=self.task.retriever(),
                       solver_params=self.config.solver_params, user_tools=self.user_tools)

    @cached_property
    def pool(self) -> WorkerPool:
        """As many warm workers as a round has candidates: they start while the current version
        is evaluated, so the candidate fan-out finds them ready."""
        return WorkerPool(size=max(2, self.config.candidates or 2), limits=self.limits)

    @cached_property
    def problems(self) -> dict:
        """Every dev problem by id (test problems are never loaded by the loop)."""
        return {p.id: p for p in self.task.dev()}

    def dev_problems(self, ids: list[str]) -> list:
        return [self.problems[i] for i in ids]


def run_solver(spec: str | ModelConfig, run_dir: Path) -> ModelClient:
    """The Solver of a run, with one response cache per run directory (unless the spec names
    one): identical deterministic calls of different candidates and rounds, and of a resumed
    run, are made once."""
    config = ModelConfig.coerce(spec)
    if config.cache is None:
        config = config.with_(cache=str(Path(run_dir) / SOLVER_CACHE))
    return get_client(config)
