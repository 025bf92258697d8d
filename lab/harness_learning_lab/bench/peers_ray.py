"""`harness-learn bench peers --ray auto|ADDRESS`: each (task, seed, system) run as a Ray task.

The grid's runs are independent once every task's split secret and index exist (the driver
makes those first, so no two workers race to write them), so they spread over a cluster as
they are. Resuming is the serial path's: a run whose `result.json` is on disk is read back by
`peers.stored` and never sent; every sent run goes through `peers.one_run`, which starts an
unfinished one again from scratch. `OUT` must therefore be a directory every node sees (on
one machine it always is).

Models: with `--solver-url`/`--proposer-url` every task talks to those servers. Without them
each Ray worker process starts the local Solver and Proposer on its own loopback the first time
it runs a task (`ensure_local_server`, kept for the worker's later tasks): two servers per
worker, so a node running N tasks at once runs 2N servers.

Each worker keeps its held-out scores in its own file under `OUT/ray/` (seeded from the
serial path's `OUT/test_scores.json`, which it only reads): concurrent writers of one JSON
file would lose entries or read a half-written one. The response cache is shared, so a score
computed again costs no Solver time.

The cluster, and the runtime_env that carries the lab to it, are `harness_learning_lab.ray_cluster`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_learning_lab.ray_cluster import connect, remote_task


def _worker_urls(settings: dict[str, Any], solver_url: str, proposer_url: str) -> tuple[str, str]:
    """`ALIAS@URL` of both servers on this worker: the given ones, or local servers this
    worker process started once and keeps for its later tasks."""
    from harness_learning.harnesses.llm.local import ensure_local_server
    from harness_learning.harnesses.llm.models import QWEN_CODER, SMOLLM2, local_model

    def reach(given: str, name: str, role: str) -> str:
        if given:
            return given
        url = ensure_local_server(timeout_s=300, name=name, instance=role)
        return f"{local_model(name).alias}@{url}"

    return (reach(solver_url, settings.get("solver_model") or SMOLLM2, "solver"),
            reach(proposer_url, QWEN_CODER, "proposer"))


def _run_one(settings: dict[str, Any], out: str, task: str, system: str, seed: int,
             solver_url: str, proposer_url: str) -> dict:
    """One run on a worker: the serial path's `one_run` with this worker's own Proposer
    proxy (it counts one run's tokens) and its own held-out score file."""
    import os

    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning_lab.bench import peers
    from harness_learning_lab.bench.peers_meter import ProposerProxy

    root = Path(out)
    solver, proposer = _worker_urls(settings, solver_url, proposer_url)
    with peers.endpoints(solver, proposer) as ends:
        proxy = ProposerProxy(ends.proposer_url)
        test_solver = peers.solver_client(ends, root / "solver_cache.sqlite",
                                          settings["solver_max_tokens"])

        def toolbox_for(t: Any) -> Any:
            return Toolbox(solver=test_solver, retriever=t.retriever(), solver_params={
                "temperature": 0.0, "max_tokens": settings["solver_max_tokens"]})

        tests = peers.TestScores(root, toolbox_for)
        own = root / "ray" / f"pid{os.getpid()}"
        own.mkdir(parents=True, exist_ok=True)
        tests.path, tests.problems_path = own / "test_scores.json", own / "test_problems.json"
        try:
            return peers.one_run(settings, ends, proxy, root, system, task, seed, tests,
                                 log=lambda msg: print(msg, flush=True))
        finally:
            proxy.close()


def run(address: str, out: Path, settings: dict[str, Any], solver_url: str = "",
        proposer_url: str = "", log: Any = print) -> list[dict]:
    """Every (task, seed, system) of `settings`, the finished ones read back here and the rest
    as Ray tasks of one CPU each; results in the serial path's order (seed-major)."""
    from harness_learning_lab.bench import peers

    ray = connect(address)  # refused before anything is written
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for task in settings["tasks"]:  # split secrets and indexes, once, before any worker reads
        peers.task_options(settings, out, task)

    remote = remote_task(ray, _run_one)
    grid = [(task, system, seed) for seed in settings["seeds"] for task in settings["tasks"]
            for system in settings["systems"]]
    slots: list[Any] = []
    for task, system, seed in grid:
        done = peers.run_path(out, task, system, seed) / "result.json"
        if done.exists():
            slots.append(peers.stored(done, settings))
        else:
            slots.append(remote.remote(settings, str(out), task, system, seed,
                                       solver_url, proposer_url))
    pending = sum(not isinstance(s, dict) for s in slots)
    log(f"ray: {pending} run(s) sent, {len(slots) - pending} read back from {out}")
    return [s if isinstance(s, dict) else ray.get(s) for s in slots]
