"""A run ready to start or continue: its config with the task and the user's tools it was
checked with (`PreparedRun`).

Why one record: checking a run opens its task (a data file, a metric) and its tools (user
modules, MCP servers). Each command used to open them again to estimate, and the adapter's
context a third time; an MCP server started three times, a metric imported three times.
`prepare` returns this record for a new run (`PreparedRun(load_config(run_dir))` is a started
one), every command hands it on, and `context()` gives the adapter what is already open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from harness_learning.graphs.adapter.inputs import open_task, open_tools

if TYPE_CHECKING:
    from harness_learning.evals.task import Task
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.harnesses.usertools import UserTools


@dataclass(frozen=True)
class PreparedRun:
    """A run's config and what has been opened of it. `task` is None until opened: a
    built-in task's track is known from its name, so `prepare` does not build its problems.
    `tools` is None for a run without tools, or until opened."""

    config: AdaptConfig
    task: Task | None = None
    tools: UserTools | None = None
    live: Mapping[str, object] = field(default_factory=dict)
    """Python objects given to `adapt()` (a metric, tools) by their `live:NAME`."""

    @property
    def tools_open(self) -> bool:
        """Whether the run's tools are open (a run without tools has nothing to open)."""
        return self.tools is not None or not self.config.tools

    def opened(self) -> PreparedRun:
        """This run with its task and tools open: a missing file or a failing import is one
        line now, before any work starts. What is open already is not opened again. A run
        directory handed by someone else is checked (`sealed_inputs`) before this."""
        live = dict(self.live)
        task = self.task if self.task is not None else open_task(self.config, live)
        tools = self.tools if self.tools_open else open_tools(self.config, live)
        return replace(self, task=task, tools=tools)

    def context(self, **overrides: Any) -> AdapterContext:
        """The adapter's context, handed what is open (`overrides` as `from_config` takes)."""
        from harness_learning.graphs.adapter.context import AdapterContext

        given: dict[str, Any] = {"live": dict(self.live)}
        if self.task is not None:
            given["task"] = self.task
        if self.tools is not None:
            given["user_tools"] = self.tools
        return AdapterContext.from_config(self.config, **{**given, **overrides})


__all__ = ["PreparedRun"]
