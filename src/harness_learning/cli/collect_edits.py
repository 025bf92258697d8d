"""Teacher runs for SFT: single-step proposals on training task types with the real Solver.

For each task, one adapter run of one round in `OUT/<task>`: the Proposer answers the seed
harness's prompt `per_task` times, and each candidate is parsed, applied, validated and scored
on the selection problems by the Solver, exactly as in `harness-learn adapt`; the log then holds
the successful edits (valid, scored above the parent) that `train sft --teacher OUT` learns from.
A folder that already holds a task's run continues it (nothing finished is redone).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig


@dataclass
class TaskEdits:
    """What one task's run yielded."""

    task: str
    run_dir: Path
    proposals: int
    valid: int
    successful: int


def run_dir_name(task: str) -> str:
    """A folder name for a task spec (rg:basic_arithmetic -> rg_basic_arithmetic)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", task).strip("_") or "task"


def task_config(task: str, out: Path, proposer: str, per_task: int, *, solver: str = "local",
                feedback: int | None = None, selection: int | None = None,
                edit_format: str | None = None, proposer_params: dict[str, Any] | None = None,
                seed: int = 0, concurrency: int = 8,
                task_options: dict[str, Any] | None = None) -> AdaptConfig:
    """One round, `per_task` candidates from the seed's prompt, every one scored."""
    if per_task < 1:
        raise ValueError(f"--per-task must be at least 1, got {per_task}")
    return AdaptConfig(
        task=task, run_dir=str(out / run_dir_name(task)), solver=solver, proposer=proposer,
        rounds=1, candidates=per_task, policy="strict", edit_format=edit_format,
        feedback=feedback, selection=selection, seed=seed, concurrency=concurrency,
        task_options=dict(task_options or {}),
        proposer_params=proposer_params or {"temperature": 0.7, "max_tokens": 2048},
    )


def tally(task: str, run_dir: Path) -> TaskEdits:
    from harness_learning.training.data import is_success, read_proposals

    proposals = read_proposals([run_dir])
    return TaskEdits(task, run_dir, len(proposals), sum(p.valid for p in proposals),
                     sum(is_success(p) for p in proposals))


def collect_edits(configs: list[AdaptConfig], on_task: Callable[[TaskEdits], object] | None = None
                  ) -> list[TaskEdits]:
    """Run (or continue) each task's single-step run in turn; returns what each yielded."""
    from harness_learning.graphs.adapter.run import prepare, run_adaptation

    results = []
    for config in configs:
        resume = (config.path / "config.json").exists()
        run = prepare(config)
        asyncio.run(run_adaptation(run.config, resume=resume, context=run.context()))
        results.append(tally(config.task, run.config.path))
        if on_task is not None:
            on_task(results[-1])
    return results
