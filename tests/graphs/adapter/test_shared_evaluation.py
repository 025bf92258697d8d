"""Two identical candidates of a round share one evaluation (`AdapterContext.evaluation_lock`):
the second waits for the first and reads its logged results, so every Solver call a run makes
is one the log holds, and how many a run makes does not depend on which sibling ran first.
Control flow with a scripted Solver, then the same run with the real local model."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from scripted_sums import SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.rundir import RunDir

EDIT = ('<<<<<<< SEARCH\nPROMPT = """Solve the problem. Think briefly, then give the final '
        'answer on the last line\n=======\nPROMPT = """Solve the problem CAREFULLY. Think '
        'briefly, then give the final answer on the last line\n>>>>>>> REPLACE\n')
SELECTION = 4


def run_twins(tmp_path, proposer, solver=None) -> tuple[list[dict], Counter, Any]:
    """One round whose two candidates are the same edit: their views, the Solver calls the
    log's evaluations hold (by version), and the Solver (the local model unless `solver`)."""
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), rounds=1, candidates=2,
                         policy="best_valid", edit_format="search_replace", feedback=2,
                         selection=SELECTION, concurrency=4,
                         solver_params={"temperature": 0.0, "max_tokens": 24},
                         ).with_track_defaults("reasoning")
    given = {"solver": solver} if solver is not None else {}
    ctx = AdapterContext.from_config(config, task=SumTask(6), proposer=proposer, **given)
    model = ctx.solver
    final = asyncio.run(run_adaptation(config, context=ctx))
    with RunDir(config.path).open_store() as store:
        logged = Counter(e.sha for e in store.iter_evaluations() for c in e.result.calls
                         if c.tool == "llm")
    return final["rounds"][0]["candidates"], logged, model


def test_twin_candidates_are_evaluated_once(tmp_path, scripted) -> None:
    solver = scripted(solver_rule)
    twins, logged, _ = run_twins(tmp_path, scripted(lambda prompt, params: EDIT), solver)
    assert twins[0]["sha"] == twins[1]["sha"]
    assert twins[0]["selection_score"] == twins[1]["selection_score"] == 1.0
    # the twin's selection problems and the judge's probe, each asked once, not once per twin
    assert sum("CAREFULLY" in call for call in solver.calls) == logged[twins[0]["sha"]] > SELECTION
    assert len(solver.calls) == sum(logged.values())


def test_twin_candidates_share_the_real_models_calls(tmp_path, scripted) -> None:
    twins, logged, solver = run_twins(tmp_path, scripted(lambda prompt, params: EDIT))
    stats = solver.stats
    assert twins[0]["sha"] == twins[1]["sha"] and twins[0]["valid"] and twins[1]["valid"]
    assert stats.calls > 0  # the real model answered
    # every ask (made, read from the response cache, or shared in flight) is one the log holds
    assert stats.calls + stats.cache_hits + stats.shared == sum(logged.values())
