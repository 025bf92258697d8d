"""Run an experiment: every (task, method, seed) is one adapter run directory under `OUT/runs`.

Methods (one row each in the report):
- `seed`, `tool_loop`: the task's seed harness and the fixed tool-loop baseline, evaluated on the
  held-out test problems without adaptation (one run per task: the Solver is deterministic);
- `untrained`: the adapter with the base Proposer at the track's rounds x candidates and policy;
- `trained`: the same with the trained Proposer named in the config (skipped when absent);
- `single_step` / `relay`: 1 round x N candidates against N rounds x 1 candidate (the relay run
  is the `untrained` run itself when that already is N x 1);
- `train_logs`: untrained-Proposer runs on the training types, the logs `harness-learn train`
  reads (not tested);
- with a `[training]` table (see `stages`): the Proposers are trained first, then each arm
  (`base`, `sft`, `sft_rl`, `teacher`) makes single-step edits of the seed (1 round x N) on the
  held-out types, and every candidate is tested, so the table can give each arm's edits' mean,
  valid and zero-score rates, and a best-of-N oracle.
Each adaptive run ends with a test evaluation of every version of its adopted chain (stored as
`test` evaluations, round -1), and an `experiment_run` event records the run's method, task,
seed and wall time: the report reads nothing else than these logs. Runs are idempotent: a
finished run is skipped, a killed one resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.inputs import harness_text
from harness_learning.graphs.adapter.nodes import evaluate_cached
from harness_learning.graphs.adapter.run import ConfigClash, load_config, run_adaptation
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import LogStore
from harness_learning.harnesses.store.pgurl import give
from harness_learning_lab.experiments.config import ExperimentSpec

RUN_EVENT = "experiment_run"
BASELINE_SEEDS = {"tool_loop": "baseline_tool_loop"}
ContextFactory = Callable[[AdaptConfig], AdapterContext]
Log = Callable[[str], None]
RunPlans = Callable[[list["RunPlan"], dict[str, Any], Log], None]
"""Runs every plan given (each as `execute` would) and returns once all have ended."""


@dataclass
class RunPlan:
    method: str
    task: str
    seed: int
    config: AdaptConfig
    eval_only: bool = False
    hard: bool = False
    tested: bool = True
    test_all: bool = False
    """Test every valid candidate, not only the adopted chain (the trained-Proposer arms)."""

    def meta(self, info: dict[str, Any]) -> dict[str, Any]:
        return {**info, "method": self.method, "task": self.task, "seed": self.seed,
                "hard": self.hard, "rounds": self.config.rounds,
                "candidates": self.config.candidates, "policy": self.config.policy,
                "proposer": self.config.proposer}


def slug(task: str) -> str:
    return task.replace(":", "_").replace("/", "_")


def plan_runs(spec: ExperimentSpec, out: Path, task_options: Callable[[str], dict],
              arms: dict[str, str] | None = None) -> list[RunPlan]:
    """Every run of the experiment, cheapest first (baselines, then adaptation); with `arms`
    (arm -> Proposer, from the training stages) the single-step arm runs replace adaptation."""
    plans: list[RunPlan] = []

    def config(task: str, method: str, seed: int, **over: Any) -> AdaptConfig:
        values = {"rounds": spec.rounds, "candidates": spec.candidates, "policy": spec.policy,
                  "feedback": spec.feedback, "selection": spec.selection,
                  "split": spec.split, "proposer": spec.proposer, **over}
        return AdaptConfig(
            task=task, run_dir=str(out / "runs" / slug(task) / method / f"seed{seed}"),
            task_options=task_options(task), solver=spec.solver, seed=seed,
            solver_params={"temperature": 0.0, "max_tokens": spec.solver_max_tokens},
            proposer_params={"temperature": spec.proposer_temperature,
                             "max_tokens": spec.proposer_max_tokens},
            concurrency=spec.concurrency, race=spec.race_rule(),
            **values).with_track_defaults(spec.track)

    for task in spec.tasks.test:
        hard = task in spec.tasks.hard
        for method in spec.baselines:
            harness = BASELINE_SEEDS.get(method)
            if method not in ("seed", *BASELINE_SEEDS):
                raise ValueError(f"unknown baseline {method!r}; known: seed, tool_loop")
            plans.append(RunPlan(method, task, 0, config(task, method, 0, rounds=0,
                                                         seed_harness=harness), True, hard))
    if arms is not None:
        return plans + arm_plans(spec, arms, config)
    n = spec.compare_candidates
    relay_is_main = spec.rounds == n and spec.candidates == 1
    for seed in spec.seeds:
        for task in spec.tasks.test:
            hard = task in spec.tasks.hard
            plans.append(RunPlan("untrained", task, seed, config(task, "untrained", seed), hard=hard))
            if n:
                plans.append(RunPlan("single_step", task, seed,
                                     config(task, "single_step", seed, rounds=1, candidates=n),
                                     hard=hard))
                if not relay_is_main:
                    plans.append(RunPlan("relay", task, seed,
                                         config(task, "relay", seed, rounds=n, candidates=1),
                                         hard=hard))
            if spec.trained_proposer:
                plans.append(RunPlan("trained", task, seed,
                                     config(task, "trained", seed, proposer=spec.trained_proposer),
                                     hard=hard))
        for task in spec.tasks.train:
            plans.append(RunPlan("train_logs", task, seed, config(task, "train_logs", seed),
                                 tested=False))
    return plans


def arm_plans(spec: ExperimentSpec, arms: dict[str, str],
              config: Callable[..., AdaptConfig]) -> list[RunPlan]:
    """Per seed, held-out type and arm: the arm's Proposer edits the seed N times (one round)."""
    train = spec.training_spec()
    plans = []
    for seed in spec.seeds:
        for task in spec.tasks.test:
            for arm, model in arms.items():
                cfg = config(task, arm, seed, rounds=1, candidates=train.candidates(arm),
                             proposer=model)
                cfg.proposer_params = {**cfg.proposer_params,
                                       "max_tokens": train.max_tokens(arm)}
                plans.append(RunPlan(arm, task, seed, cfg, hard=task in spec.tasks.hard,
                                     test_all=True))
    return plans


def write_config(config: AdaptConfig) -> None:
    """As `graphs.adapter.run.prepare`, without building the task: refuse a changed config."""
    run = RunDir(config.path)
    if run.is_run():
        if load_config(run).to_json() != config.to_json():
            raise ConfigClash(f"{config.path} already holds a run with another config: use a "
                             "new --out, or delete that run directory")
        return
    run.write_config(json.loads(config.to_json()))


def finished(store: LogStore) -> bool:
    """The run recorded its `experiment_run` event (its last step)."""
    return any(True for _ in store.iter_events(kinds=[RUN_EVENT]))


async def execute(plan: RunPlan, info: dict[str, Any], make_context: ContextFactory, log: Log) -> None:
    """Run (or resume) one plan, test its adopted chain, record the experiment_run event."""
    give(plan.config.store)  # the experiment file's store (here or on a Ray worker): given
    write_config(plan.config)
    async with make_context(plan.config) as ctx:
        if finished(ctx.store):
            log(f"done already: {plan.config.run_dir}")
            return
        log(f"run: {plan.method} on {plan.task} (seed {plan.seed}) -> {plan.config.run_dir}")
        start = time.perf_counter()
        if plan.eval_only:
            if ctx.store.get_run() is None:
                ctx.store.init_run(json.loads(plan.config.to_json()))
            name = plan.config.seed_harness or ctx.task.seed
            text = harness_text(name)  # a seed name (None), a harness file or source text
            ctx.store.put_version(text if text is not None else seed_source(name), parent=None,
                                  round_=0, note=name)
    if not plan.eval_only:  # the run opens and closes a context of its own
        final = await run_adaptation(plan.config, resume=True,
                                     context=make_context(plan.config))
        log(f"  stopped: {final.get('stop_reason', '?')}")
    async with make_context(plan.config) as ctx:
        if plan.tested:
            await test_chain(ctx, log)
        if plan.test_all:
            await test_candidates(ctx, log)
        wall = time.perf_counter() - start
        ctx.store.append_event(RUN_EVENT, {**plan.meta(info), "wall_s": round(wall, 1)})


async def test_chain(ctx: AdapterContext, log: Log) -> None:
    """Every distinct version of the adopted chain on the held-out test problems."""
    problems = ctx.task.test()
    for sha in dict.fromkeys(step.sha for step in await ctx.store.alineage()):
        result = await evaluate_cached(ctx, sha, problems, "test", -1)
        log(f"  test {sha[:12]}: {result.mean_score:.3f} on {len(problems)}")


async def test_candidates(ctx: AdapterContext, log: Log) -> None:
    """Every valid candidate of the run on the held-out test problems (cached per version)."""
    problems = ctx.task.test()
    shas = dict.fromkeys(p.candidate_sha for p in ctx.store.iter_proposals()
                         if p.valid and p.candidate_sha)
    for sha in shas:
        result = await evaluate_cached(ctx, sha, problems, "test", -1)
        log(f"  candidate {sha[:12]}: {result.mean_score:.3f} on {len(problems)}")


def task_options_for(spec: ExperimentSpec, out: Path, log: Log) -> Callable[[str], dict]:
    """Per task, the options `get_task` gets; QA indexes are built into `OUT/indexes` first."""
    sizes = {k: v for k, v in {"n_dev": spec.n_dev, "n_test": spec.n_test}.items() if v is not None}
    if spec.track == "reasoning":
        return lambda task: {**sizes, "seed": 0, **(
            {"config": spec.task_configs[task]} if task in spec.task_configs else {})}
    from harness_learning.evals.samples import SAMPLE_CORPORA, data_dir

    options: dict[str, dict] = {}
    for task in dict.fromkeys([*spec.tasks.test, *spec.tasks.train]):
        kind, corpus = spec.corpora.get(task) or SAMPLE_CORPORA[task]
        index = out / "indexes" / slug(task)
        if not (index / "manifest.json").exists():
            from harness_learning import retrieval

            log(f"building the BM25 index of {corpus} ({kind}) into {index}")
            retrieval.build_index(kind, data_dir() / corpus, index, progress=False)
        options[task] = {**sizes, "seed": 0, "index_dir": str(index)}
        if task in spec.datasets:
            options[task]["path"] = str(data_dir() / spec.datasets[task])
    return lambda task: options[task]


async def run_experiment(spec: ExperimentSpec, out: str | Path,
                         make_context: ContextFactory = AdapterContext,
                         task_options: Callable[[str], dict] | None = None,
                         log: Log = print, stage_work: Any = None,
                         run_plans: RunPlans | None = None) -> list[RunPlan]:
    """Every run of `spec` into `out` (resuming finished ones), in plan order; a `[training]`
    experiment first runs its stages with `stage_work` (a `stages.StageWork`). `run_plans`
    runs the plan's runs elsewhere (`experiments.on_ray.on_cluster`); by default they run here,
    one after another."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "experiment.json").write_text(json.dumps(spec.to_dict(), indent=2))
    options = task_options or task_options_for(spec, out, log)
    arms = None
    if spec.training:
        from harness_learning_lab.experiments.stages import train_proposers

        if stage_work is None:
            raise ValueError("a [training] experiment needs its stages' work: run it with "
                             "`harness-learn experiment`")
        arms = await train_proposers(spec, out, options, log, stage_work)
        (out / "arms.json").write_text(json.dumps(arms, indent=1))
    plans = plan_runs(spec, out, options, arms)
    info = {"experiment": spec.name, "track": spec.track, "scale": spec.scale,
            "compare_candidates": spec.compare_candidates}
    if run_plans is not None:
        await asyncio.to_thread(run_plans, plans, info, log)
        return plans
    for i, plan in enumerate(plans, 1):
        log(f"[{i}/{len(plans)}]")
        await execute(plan, info, make_context, log)
    return plans
