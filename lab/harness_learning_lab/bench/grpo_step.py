"""`harness-learn bench grpo-step`: where one online GRPO step's time goes, TRL's per-row forward
against the shared-prefix one (training/shared_prefix.py), in one run.

Each path trains one step of one group from the same logged prompts and model, and its time is
split into generation (`_generate_single_turn`), reward (the sandboxed evaluations of the group,
`HarnessReward.__call__`), the loss forward (`_get_per_token_logps_and_entropies`) and the rest
of the step (backward and optimizer). The hooks only time; both paths run as `train grpo-online`
would run them.
"""

from __future__ import annotations

import contextlib
import inspect
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PHASES = ("generate", "reward", "loss_forward", "backward_and_rest", "step")


@contextlib.contextmanager
def _timed(owner: type, name: str, into: dict[str, float], phase: str) -> Iterator[None]:
    """Add the seconds each call of `owner.name` takes to `into[phase]` (async or not)."""
    original = owner.__dict__[name]
    if inspect.iscoroutinefunction(original):
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                into[phase] += time.perf_counter() - start
    else:
        def timed(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                into[phase] += time.perf_counter() - start
    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def one_step(logs: list[Path], config: Any) -> dict[str, Any]:
    """One online GRPO step of `config` on the prompts of `logs`, its time split by phase."""
    from trl import GRPOTrainer

    from harness_learning.training.grpo_online import HarnessReward, train_grpo_online
    from harness_learning.training.prefix_trainer import SharedPrefixGRPOTrainer

    times = dict.fromkeys(PHASES, 0.0)
    trainer = SharedPrefixGRPOTrainer if config.shared_prefix else GRPOTrainer
    hooks = [(GRPOTrainer, "_generate_single_turn", "generate"),
             (HarnessReward, "__call__", "reward"),
             (trainer, "_get_per_token_logps_and_entropies", "loss_forward"),
             (GRPOTrainer, "training_step", "step")]
    with contextlib.ExitStack() as stack:
        for owner, name, phase in hooks:
            stack.enter_context(_timed(owner, name, times, phase))
        result = train_grpo_online(logs, config, progress=False)
    # Generation and reward run inside the first micro-batch's training_step.
    times["backward_and_rest"] = max(0.0, times["step"] - times["generate"] - times["reward"]
                                     - times["loss_forward"])
    return {**{k: round(v, 3) for k, v in times.items()}, "reward_mean": result.summary.get(
        "reward_mean"), "entropy": result.summary.get("entropy")}


def run(logs: list[Path], base: Any, paths: tuple[str, ...] = ("trl", "shared"),
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Each path's phases on the same prompts and model; the step-time ratio when both ran."""
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grpo-") as tmp:
        for path in paths:
            shared = path == "shared"
            config = base.replace(out=str(Path(tmp) / path), shared_prefix=shared, max_steps=1,
                                 save=False, micro_batch_size=0 if shared else base.micro_batch_size)
            log(f"grpo step: {path} path ({base.num_generations} completions of up to "
                f"{base.max_completion_length} tokens, micro-batch {config.micro_batch_size or 'all'})")
            rows[path] = one_step(logs, config)
            log(f"  step {rows[path]['step']} s")
    figures: dict[str, Any] = {"paths": rows}
    if {"trl", "shared"} <= set(rows) and rows["shared"]["step"]:
        figures["speedup"] = round(rows["trl"]["step"] / rows["shared"]["step"], 2)
    return figures


def table(figures: dict[str, Any]) -> str:
    lines = ["| path | " + " | ".join(f"{p} s" for p in PHASES) + " |",
             "|---|" + "---|" * len(PHASES)]
    for path, row in figures["paths"].items():
        lines.append(f"| {path} | " + " | ".join(f"{row[p]:.1f}" for p in PHASES) + " |")
    if "speedup" in figures:
        lines.append(f"\nstep time, TRL's path over the shared prefix: {figures['speedup']}x")
    return "\n".join(lines)
