"""The Proposer-SFT experiment, stage by stage, into `OUT/stages/` and `OUT/runs/`:

1. `collect`: `adapt` with the interpreter operator on, the base Proposer writing focused
   (`function`) edits, over training types x collect seeds x seed harness shapes;
2. `demonstrations`: the logged successes in the Proposer's focused format
   (`training.demonstrations`: judged from the log, above their parent, operator adoptions
   inlined, provenance and the prompt-format hash kept), and their token counts under the
   student's chat template;
3. `sft`: LoRA SFT of the student on them (resumable: a killed stage restarts from its last
   checkpoint on the same curve); skipped, and said so, when the set is empty;
4. `export`: the student and the base as Q8_0 GGUF files of the same architecture, so both
   Proposer arms are served at one precision;
5. arms, on held-out and control types: the seed; the base Proposer and the student with
   operators off (single-step edits, and a relay); the base with operators on (the ceiling).
   Every arm runs the demonstrations' prompt: focused edits, the same report budget, run memory
   off.
Each stage writes `stage.json` when it finishes and is reused on a rerun with the same
parameters (`stages.run_stage`); each arm run is an adapter run directory resumed where it
stopped. CPU seconds and the load average are recorded beside each stage's wall time.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning_lab.experiments.runner import RunPlan, execute, slug
from harness_learning_lab.experiments.sft_spec import SFTExperimentSpec
from harness_learning_lab.experiments.stages import run_stage

Log = Callable[[str], None]
PROPOSER_ARMS = ("base", "student")
DEMOS = "demonstrations.jsonl"


def task_options(spec: SFTExperimentSpec, task: str) -> dict[str, Any]:
    config = {"config": spec.task_configs[task]} if task in spec.task_configs else {}
    return {"n_dev": spec.n_dev, "n_test": spec.n_test, "seed": 0, **config}


def adapt_config(spec: SFTExperimentSpec, out: Path, task: str, method: str, seed: int,
                 **over: Any) -> AdaptConfig:
    """One run's config: the focused prompt every stage and arm shares (function edits, the
    report budget, run memory off, no building-blocks menu: the operator applies the block in
    collection, and a Proposer under test is told of none), `over` on top."""
    values = {"rounds": 1, "candidates": spec.edits, "policy": "best_valid",
              "operators": "none", "proposer": spec.proposer, **over}
    return AdaptConfig(
        task=task, run_dir=str(out / "runs" / slug(task) / method / f"seed{seed}"),
        task_options=task_options(spec, task), solver=spec.solver, seed=seed,
        solver_params={"temperature": 0.0, "max_tokens": spec.solver_max_tokens},
        proposer_params={"temperature": spec.proposer_temperature,
                         "max_tokens": spec.proposer_max_tokens},
        concurrency=spec.concurrency, feedback=spec.feedback, selection=spec.selection,
        edit_format="function", memory_tokens=0, report_chars=spec.report_chars,
        block_menu=False,
        **values).with_track_defaults("reasoning")


def collect_plans(spec: SFTExperimentSpec, out: Path) -> list[RunPlan]:
    return [RunPlan(f"collect_{shape}", task, seed, adapt_config(
        spec, out, task, f"collect_{shape}", seed, rounds=spec.collect_rounds,
        candidates=spec.collect_candidates, policy="strict", operators="interpreter",
        seed_harness=shape), tested=False)
        for task in spec.train_types for seed in spec.collect_seeds for shape in spec.shapes]


def arm_plans(spec: SFTExperimentSpec, out: Path, models: dict[str, str]) -> list[RunPlan]:
    """Per test type and seed: the seed, each Proposer arm's single-step edits and (on the
    first `relay_seeds` seeds) relay, and the ceiling (the base with the interpreter operator on). Ordered seed by seed, every
    type's single-step arms before any relay: a stopped experiment's partial table covers
    every type, and the slow relays come last."""
    single, relays = [], []
    for i, seed in enumerate(spec.seeds):
        shape = spec.heldout_shapes[i % len(spec.heldout_shapes)]
        for task in spec.test_types:
            cfg = partial(_arm_config, spec, out, task, seed, shape)
            single.append(RunPlan("seed", task, seed, cfg("seed", rounds=0), eval_only=True))
            for arm in PROPOSER_ARMS:
                single.append(RunPlan(arm, task, seed, cfg(arm, proposer=models[arm]),
                                      test_all=True))
            single.append(RunPlan("ceiling", task, seed, cfg(
                "ceiling", proposer=models["base"], operators="interpreter"), test_all=True))
            if spec.relay_rounds and i < spec.relay_seeds:
                relays.extend(RunPlan(f"{arm}_relay", task, seed, cfg(
                    f"{arm}_relay", proposer=models[arm], rounds=spec.relay_rounds,
                    candidates=1, policy="strict")) for arm in PROPOSER_ARMS)
    return single + relays


def _arm_config(spec: SFTExperimentSpec, out: Path, task: str, seed: int, shape: str,
                method: str, **over: Any) -> AdaptConfig:
    return adapt_config(spec, out, task, method, seed, seed_harness=shape, **over)


def _measured(work: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """`work` with its CPU seconds (this process and its finished children) and the 1-minute
    load average at its end added to its result."""
    def run() -> dict[str, Any]:
        def cpu() -> float:
            me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
            return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

        start = cpu()
        result = work()
        return {**result, "cpu_s": round(cpu() - start, 1),
                "load_avg_1m": round(os.getloadavg()[0], 2)}
    return run


async def _run_plans(plans: list[RunPlan], info: dict[str, Any], log: Log,
                     make_context: Callable[[AdaptConfig], Any]) -> None:
    for i, plan in enumerate(plans, 1):
        log(f"[{i}/{len(plans)}] {plan.method} on {plan.task} (seed {plan.seed})")
        await execute(plan, info, make_context, log)


def collect_work(spec: SFTExperimentSpec, out: Path, info: dict[str, Any], log: Log,
                 make_context: Callable) -> dict[str, Any]:
    plans = collect_plans(spec, out)
    asyncio.run(_run_plans(plans, info, log, make_context))
    return {"run_dirs": [p.config.run_dir for p in plans]}


def demonstrations_work(spec: SFTExperimentSpec, folder: Path, run_dirs: list[str],
                        log: Log) -> dict[str, Any]:
    from harness_learning.training.data import LogError
    from harness_learning.training.demonstrations import demonstrations, token_counts
    from harness_learning.training.loading import load_tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    try:
        rows, summary = demonstrations(run_dirs, keep_ties=spec.demo_keep_ties)
    except LogError as err:
        log(f"demonstrations: none usable: {err}")
        return {"rows": 0, "skipped": str(err)}
    (folder / DEMOS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tokens = token_counts(rows, load_tokenizer(spec.student))
    for line in summary.lines():
        log(f"demonstrations: {line}")
    log(f"demonstrations: prompt tokens mean {tokens['prompt']['mean']} max "
        f"{tokens['prompt']['max']} ({tokens['prompts_over_aim']} over {tokens['aim']}); "
        f"completion tokens mean {tokens['completion']['mean']} max "
        f"{tokens['completion']['max']} ({spec.student}'s chat template); "
        f"{sum(p + c > spec.sft_max_length for p, c in tokens['per_row'])} longer than "
        f"sft_max_length {spec.sft_max_length} (cut on the right)")
    return {"rows": len(rows), "file": str(folder / DEMOS), "summary": summary.to_dict(),
            "tokens": tokens, "ties_kept": spec.demo_keep_ties}


def sft_work(spec: SFTExperimentSpec, folder: Path, demos: dict[str, Any]) -> dict[str, Any]:
    if not demos.get("rows"):
        return {"checkpoint": None, "skipped": demos.get("skipped", "no demonstrations")}
    import torch
    from datasets import Dataset

    from harness_learning.training.config import SFTTrainConfig
    from harness_learning.training.sft import fit_sft

    torch.set_num_threads(1)  # on 2 shared cores more threads spin (training/README.md)
    rows = [json.loads(line) for line in Path(demos["file"]).read_text().splitlines()]
    dataset = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]}
                                 for r in rows])
    config = SFTTrainConfig(
        model=spec.student, out=str(folder), num_epochs=spec.sft_epochs, max_steps=-1,
        batch_size=1, learning_rate=spec.sft_learning_rate, max_length=spec.sft_max_length,
        save_steps=spec.sft_save_steps, lora_r=spec.lora_r, lora_alpha=2 * spec.lora_r,
        bf16_cpu=spec.sft_bf16)
    start = time.perf_counter()
    result = fit_sft(dataset, config, [Path(demos["file"])], None, "SFT on demonstrations",
                     progress=False)
    steps = int(result.summary.get("step", 0)) or 1
    return {"checkpoint": str(result.checkpoint), "summary": result.summary,
            "s_per_step": round((time.perf_counter() - start) / steps, 1),
            "metrics": str(result.metrics), "plot": str(result.png)}


def export_work(spec: SFTExperimentSpec, folder: Path, checkpoint: str | None) -> dict[str, Any]:
    """The base and the student as GGUF files of the student's architecture (the student is
    the base when SFT was skipped)."""
    from harness_learning.training.export import export_checkpoint, write_gguf
    from harness_learning.training.loading import gguf_path, load_model

    reference = gguf_path(spec.student)
    if reference is None:
        raise ValueError(f"student {spec.student!r} is not a GGUF model: give 'smollm2', "
                         "'qwen2.5-coder-1.5b' or a .gguf path")
    base = write_gguf(load_model(spec.student), reference, folder / "base.gguf", name="base")
    student = (export_checkpoint(Path(checkpoint), reference, folder / "student.gguf")
               if checkpoint else base)
    return {"gguf": {"base": str(base), "student": str(student)},
            "student_trained": checkpoint is not None}


async def run_sft_experiment(spec: SFTExperimentSpec, out: str | Path, log: Log = print,
                             make_context: Callable = AdapterContext) -> dict[str, Any]:
    """Every stage and arm run of `spec` into `out`, each reused when done; returns the
    table (`sft_table.write_table`)."""
    from harness_learning_lab.experiments.sft_table import write_table

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "experiment.json").write_text(json.dumps(spec.to_dict(), indent=2))
    root, info = out / "stages", {"experiment": spec.name, "scale": spec.scale}
    training = {k: v for k, v in spec.to_dict().items() if k not in (
        "heldout_types", "control_types", "seeds", "heldout_shapes", "edits", "relay_rounds",
        "relay_seeds", "name", "scale")}
    p_collect = {k: v for k, v in training.items()
                 if not k.startswith(("sft", "lora", "demo"))}
    collected = await run_stage(root / "collect", p_collect, _measured(
        lambda: collect_work(spec, out, info, log, make_context)), log)
    p_demos = {"after": p_collect, "student": spec.student, "ties": spec.demo_keep_ties}
    demos = await run_stage(root / "demonstrations", p_demos, _measured(
        lambda: demonstrations_work(spec, root / "demonstrations", collected["run_dirs"], log)),
        log)
    p_sft = {"after": p_demos, **{k: v for k, v in training.items()
                                  if k.startswith(("sft", "lora")) and k != "sft_save_steps"}}
    sft = await run_stage(root / "sft", p_sft, _measured(
        lambda: sft_work(spec, root / "sft", demos)), log)
    exported = await run_stage(root / "export", {"after": p_sft}, _measured(
        lambda: export_work(spec, root / "export", sft.get("checkpoint"))), log)
    models = {arm: f"local:{Path(p).resolve()}" for arm, p in exported["gguf"].items()}
    (out / "arms.json").write_text(json.dumps(models, indent=1))
    start = time.perf_counter()
    await _run_plans(arm_plans(spec, out, models), info, log, make_context)
    log(f"arms: {time.perf_counter() - start:.0f}s")
    return write_table(out, spec)
