"""Wall time of an experiment grid run one run after another against the same grid on a local
Ray cluster of 1 and of 2 workers (`harness-learn bench experiment-grid`).

The models are the simulated endpoint with a fixed latency per call, as a remote server (vLLM,
an API) would answer: a grid's runs then wait on the network, not on this machine's cores, and
two workers should take about half the time. With the local GGUF models every worker starts
its own servers on the same cores, and on one 2-core node no speed-up is to be had (docs/
SCALE_OUT.md). Each configuration writes a fresh output folder, so nothing is read back.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_learning.harnesses.llm.simserver import SimServer
from harness_learning_lab.experiments.config import ExperimentSpec, Tasks

Log = Callable[[str], None]


def grid_spec(url: str, seeds: int) -> ExperimentSpec:
    """Per seed a seed baseline and one adaptive run on basic_arithmetic, both models the
    simulated endpoint."""
    model = f"openai/sim@{url}?api_key=local"
    return ExperimentSpec(name="grid", track="reasoning", scale="smoke", seeds=list(range(seeds)),
                          rounds=2, candidates=1, feedback=4, selection=4, n_dev=8, n_test=4,
                          baselines=["seed"], solver=model, proposer=model, concurrency=4,
                          solver_max_tokens=64, proposer_max_tokens=256,
                          tasks=Tasks(test=["rg:basic_arithmetic"]))


def _timed(spec: ExperimentSpec, out: Path, run_plans: Any) -> float:
    from harness_learning_lab.experiments.runner import run_experiment

    start = time.perf_counter()
    asyncio.run(run_experiment(spec, out, log=lambda _m: None, run_plans=run_plans))
    return time.perf_counter() - start


def _on_ray(spec: ExperimentSpec, out: Path, workers: int) -> float:
    import ray

    from harness_learning_lab import ray_cluster
    from harness_learning_lab.experiments.on_ray import on_cluster

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
             runtime_env=ray_cluster.runtime_env())
    try:
        return _timed(spec, out, on_cluster("auto"))
    finally:
        ray.shutdown()


def run(latency_s: float = 0.5, seeds: int = 2, repeats: int = 1,
        log: Log = print) -> dict[str, Any]:
    """Wall seconds of the grid per configuration (serial, Ray with 1 and 2 workers), each the
    median of `repeats` runs taken in turn, and each one's speed-up over serial."""
    walls: dict[str, list[float]] = {"serial": [], "ray_1": [], "ray_2": []}
    with SimServer(latency_s=latency_s, slots=64) as url, \
            tempfile.TemporaryDirectory(prefix="hl-grid-") as tmp:
        spec = grid_spec(url, seeds)
        for rep in range(repeats):
            for name in walls:
                out = Path(tmp) / f"{name}-{rep}"
                wall = (_timed(spec, out, None) if name == "serial"
                        else _on_ray(spec, out, int(name[-1])))
                walls[name].append(wall)
                log(f"{name} (repeat {rep + 1}/{repeats}): {wall:.1f} s")
    runs = 2 * seeds
    median = {name: sorted(w)[len(w) // 2] for name, w in walls.items()}
    return {"latency_s": latency_s, "runs": runs, "repeats": repeats,
            "configs": {name: {"wall_s": round(m, 1),
                               "speedup": round(median["serial"] / m, 2)}
                        for name, m in median.items()}}


def table(figures: dict[str, Any]) -> str:
    lines = [f"experiment grid: {figures['runs']} runs, simulated models at "
             f"{figures['latency_s']} s a call, median of {figures['repeats']}",
             "| configuration | wall s | speed-up over serial |", "|---|---|---|"]
    for name, f in figures["configs"].items():
        lines.append(f"| {name} | {f['wall_s']} | {f['speedup']} |")
    return "\n".join(lines)
