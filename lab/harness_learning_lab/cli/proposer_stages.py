"""The work of a trained-Proposer experiment's stages (`experiments/stages.py` plans and
records them): the teacher's runs through `collect-edits`, the SFT and online GRPO trainers, and
the GGUF export. It lives with the lab's commands, which may drive the product's command line
(tests/test_structure.py): `harness-learn experiment` wraps these functions in a
`stages.StageWork` for the experiment runner; `train` is a `stages.TrainingSpec`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def collect_stage(spec: Any, train: Any, folder: Path,
                  options: Callable[[str], dict]) -> dict[str, Any]:
    from harness_learning.cli.collect_edits import collect_edits, task_config

    configs = [task_config(t, folder, train.teacher, train.per_task, solver=spec.solver,
                           feedback=spec.feedback, selection=spec.selection,
                           proposer_params={"temperature": spec.proposer_temperature,
                                            "max_tokens": train.teacher_max_tokens},
                           concurrency=spec.concurrency, task_options=options(t))
               for t in spec.tasks.train]
    found = collect_edits(configs)
    return {"tasks": {r.task: {"run_dir": str(r.run_dir), "proposals": r.proposals,
                               "valid": r.valid, "successful": r.successful} for r in found},
            "successful": sum(r.successful for r in found)}


def one_thread() -> None:
    """One intra-op torch thread: on 2 shared cores more threads spin against the Solver and
    each other (training/README.md measured it)."""
    import torch

    torch.set_num_threads(1)


def sft_stage(train: Any, folder: Path, collected: dict[str, Any]) -> dict[str, Any]:
    from harness_learning.training.config import SFTTrainConfig
    from harness_learning.training.data import LogError
    from harness_learning.training.sft import train_sft

    one_thread()
    config = SFTTrainConfig(model=train.student, out=str(folder), lora=train.lora,
                            teacher=[r["run_dir"] for r in collected["tasks"].values()],
                            num_epochs=train.sft_epochs, max_steps=-1, batch_size=1,
                            learning_rate=train.sft_learning_rate,
                            max_length=train.sft_max_length, keep_ties=train.sft_keep_ties,
                            save_steps=train.sft_save_steps)
    try:
        result = train_sft([], config, progress=False)
    except LogError as err:  # nothing to learn: say so, and the SFT arm is the base student
        return {"checkpoint": None, "skipped": str(err)}
    report = result.report
    return {"checkpoint": str(result.checkpoint), "summary": result.summary,
            "examples": report.proposals_kept if report else None,
            "notes": report.notes if report else []}


def grpo_stage(spec: Any, train: Any, folder: Path, collected: dict[str, Any],
               sft: dict[str, Any]) -> dict[str, Any]:
    from harness_learning.training.config import GRPOOnlineConfig
    from harness_learning.training.grpo_online import train_grpo_online

    one_thread()
    config = GRPOOnlineConfig(
        model=sft["checkpoint"] or train.student, out=str(folder), lora=train.lora,
        num_generations=train.group_size, batch_size=train.group_size,
        max_steps=train.grpo_steps, learning_rate=train.grpo_learning_rate,
        micro_batch_size=train.grpo_micro_batch,
        max_completion_length=train.student_max_tokens, temperature=train.grpo_temperature,
        num_problems=train.grpo_problems, solver=spec.solver, concurrency=spec.concurrency,
        max_length=train.sft_max_length)
    start = time.perf_counter()
    result = train_grpo_online([r["run_dir"] for r in collected["tasks"].values()], config,
                               progress=False)
    wall = time.perf_counter() - start
    return {"checkpoint": str(result.checkpoint), "summary": result.summary,
            "s_per_step": round(wall / max(1, train.grpo_steps), 1), "log": str(folder / "log")}


def export_stage(train: Any, folder: Path, checkpoints: dict[str, str | None]
                 ) -> dict[str, Any]:
    """Each student arm as a GGUF of the student's own architecture, with the student's GGUF
    as the reference; the base is that GGUF rebuilt and re-exported, so every student arm is
    served at the same precision (Q8_0)."""
    from harness_learning.training.export import export_checkpoint, write_gguf
    from harness_learning.training.loading import gguf_path, load_model

    reference = gguf_path(train.student)
    if reference is None:
        raise ValueError(f"[training] student {train.student!r} is not a GGUF model: give "
                         "'smollm2', 'qwen2.5-coder-1.5b' or a .gguf path (the export copies its "
                         "tokenizer and chat template)")
    files = {"base": str(write_gguf(load_model(train.student), reference,
                                    folder / "base.gguf", name="base"))}
    for arm, ckpt in checkpoints.items():
        files[arm] = (str(export_checkpoint(Path(ckpt), reference, folder / f"{arm}.gguf"))
                      if ckpt else files["base"])
    return {"gguf": files}
