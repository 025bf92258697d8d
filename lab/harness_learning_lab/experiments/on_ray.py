"""`harness-learn experiment CONFIG --ray auto|ADDRESS`: each run of the plan as a Ray task.

Runs of an experiment are independent once its indexes are built and its Proposers trained
(the driver does both first, as the serial path does), so they spread over a cluster as they
are. Resuming is the serial path's: every run goes through `runner.execute`, which skips a
finished run and resumes a killed one from its log; a finished run is read back here from its
`experiment_run` event and never sent. `OUT` must be a directory every node sees (on one
machine it always is), and each run has a run directory (its log, checkpoints and response
cache) of its own, so no two tasks write one file.

Models are reached as the config names them: a litellm string or `ALIAS@URL` reaches the same
servers from every worker; `local` starts the embedded model once per worker process (kept
for its later runs): one server per role per worker, so a node running N runs at once runs
up to 2N servers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_learning_lab.ray_cluster import connect, remote_task


def _execute_one(plan: Any, info: dict[str, Any]) -> str:
    """One plan on a worker (its log lines go to the worker's log, which Ray forwards)."""
    import asyncio

    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning_lab.experiments.runner import execute

    asyncio.run(execute(plan, info, AdapterContext, lambda msg: print(msg, flush=True)))
    return plan.config.run_dir


def _finished(plan: Any) -> bool:
    """The plan's run has recorded its `experiment_run` event (`runner.finished`, read from
    the log alone: no context, so no model is started for a run that will not be sent)."""
    from harness_learning.harnesses.rundir import RunDir
    from harness_learning_lab.experiments.runner import finished

    run = RunDir(plan.config.path)
    if not run.log.exists():
        return False
    with run.open_store() as store:
        return finished(store)


def on_cluster(address: str) -> Any:
    """A `runner.RunPlans` that sends each unfinished plan as a Ray task of one CPU to the
    cluster at `address` (auto or HOST:PORT), attached now: a cluster that does not answer is
    refused before the experiment writes anything. The first run that failed is raised after
    the others ended, so none is left half-written."""
    ray = connect(address)

    def run_plans(plans: list[Any], info: dict[str, Any],
                  log: Callable[[str], None] = print) -> None:
        from harness_learning_lab.experiments.runner import write_config

        for plan in plans:  # as `execute` would, before any worker opens the run
            write_config(plan.config)
        remote = remote_task(ray, _execute_one)
        sent = [remote.remote(plan, info) for plan in plans if not _finished(plan)]
        log(f"ray: {len(sent)} run(s) sent, {len(plans) - len(sent)} read back")
        failures = []
        for ref in sent:
            try:
                log(f"  finished: {ray.get(ref)}")
            except Exception as e:  # noqa: BLE001 - reported once the rest have ended
                failures.append(e)
        if failures:
            raise failures[0]

    return run_plans
