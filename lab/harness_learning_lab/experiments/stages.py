"""Training a Proposer inside an experiment: the paper's recipe, stage by stage.

An experiment whose TOML has a `[training]` table first runs, into `OUT/stages/`:
1. `collect`: the teacher's single-step edits on the training types (`collect-edits`'s runs,
   scored by the real Solver);
2. `sft`: the student fine-tuned on the teacher's successful edits (skipped, and said so, when
   there are none: the SFT arm is then the base student);
3. `grpo`: online GRPO from the SFT student on the training types' prompts, groups of
   `group_size`, the paper's reward (score + validity bonus, `evals.rewards`);
4. `export`: base, SFT and SFT+RL students as GGUF files the local llama.cpp server loads
   (`training.export`), so each serves as `--proposer OUT/stages/export/<arm>.gguf`.
The lab holds the plan and the bookkeeping; the work of each stage (teacher runs, trainers,
export) is given by the lab's command line (`harness_learning_lab.cli.proposer_stages`), the one part that
drives training. Each stage records `stage.json` (its parameters and result) when it finishes; a later run with
the same parameters reuses it, one with other parameters stops with the fix named.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

Log = Callable[[str], None]
STUDENT_ARMS = ("base", "sft", "sft_rl")
ARMS = ("seed", "tool_loop", *STUDENT_ARMS, "teacher", "oracle")
STAGE_FILE = "stage.json"


@dataclass
class TrainingSpec:
    teacher: str = "local:qwen2.5-coder-1.5b"
    student: str = "smollm2"
    """Trained model (`TrainConfig.model`: 'smollm2', 'qwen2.5-coder-1.5b' or a .gguf);
    exported with that GGUF as the reference."""
    lora: bool = True
    per_task: int = 8
    """Teacher proposals per training type (one group: they answer the same prompt)."""
    teacher_max_tokens: int = 512
    sft_epochs: float = 3.0
    sft_learning_rate: float = 2e-4
    sft_max_length: int = 4096
    sft_keep_ties: bool = False
    """SFT also on the teacher's valid edits that tie the seed (`train sft --keep-ties`)."""
    sft_save_steps: int = 4
    """A resumable SFT checkpoint every this many steps (`train sft --save-steps`): a killed
    stage resumes from the last one on the same batches and loss curve."""
    grpo_steps: int = 10
    group_size: int = 8
    grpo_learning_rate: float = 2e-5
    grpo_problems: int = 4
    """Selection problems each sampled edit is scored on during GRPO."""
    grpo_temperature: float = 1.0
    grpo_micro_batch: int = 0
    """Sequences per backward pass; 0: the whole group at once, its shared prompt run once
    (`GRPOOnlineConfig.shared_prefix`). Without the shared prefix a whole group of ~2k-token
    prompts ran out of memory on 24 GiB, and 1 was needed."""
    student_max_tokens: int = 384
    eval_candidates: int = 8
    """Single-step edits of the seed per student arm, held-out type and seed."""
    teacher_candidates: int = 2
    oracle_of: str = "sft_rl"
    """The arm whose `eval_candidates` edits the best-of-N oracle picks from (by test score)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingSpec:
        known = {f.name for f in fields(cls)}
        bad = sorted(set(data) - known)
        if bad:
            raise ValueError(f"unknown key(s) in [training]: {bad}; known: {sorted(known)}")
        spec = cls(**data)
        if spec.oracle_of not in (*STUDENT_ARMS, "teacher"):
            raise ValueError(f"oracle_of must be one of {(*STUDENT_ARMS, 'teacher')}")
        if spec.group_size < 2 or min(spec.per_task, spec.eval_candidates,
                                      spec.teacher_candidates) < 1:
            raise ValueError("group_size must be >= 2; per_task and the candidate counts >= 1")
        return spec

    def candidates(self, arm: str) -> int:
        return self.teacher_candidates if arm == "teacher" else self.eval_candidates

    def max_tokens(self, arm: str) -> int:
        return self.teacher_max_tokens if arm == "teacher" else self.student_max_tokens


@dataclass
class StageWork:
    """What each stage does; each returns its JSON-able result (see the module docstring)."""

    collect: Callable[..., dict[str, Any]]
    sft: Callable[..., dict[str, Any]]
    grpo: Callable[..., dict[str, Any]]
    export: Callable[..., dict[str, Any]]


def stage_done(folder: Path, params: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded result of a finished stage with these parameters; None when unfinished."""
    path = folder / STAGE_FILE
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if record["params"] != json.loads(json.dumps(params)):
        raise ValueError(f"{folder} finished with other parameters: use a new --out, or delete "
                         f"{folder} (and the stages after it) to redo it")
    return record["result"]


def finish_stage(folder: Path, params: dict[str, Any], result: dict[str, Any],
                 wall_s: float) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STAGE_FILE).write_text(json.dumps(
        {"params": params, "result": result, "wall_s": round(wall_s, 1)}, indent=1))
    return result


async def run_stage(folder: Path, params: dict[str, Any], work: Callable[[], dict[str, Any]],
                    log: Log) -> dict[str, Any]:
    """`work()` in a thread (it trains or runs its own event loop) unless already done."""
    done = stage_done(folder, params)
    if done is not None:
        log(f"stage {folder.name}: done already ({folder / STAGE_FILE})")
        return done
    log(f"stage {folder.name}: running -> {folder}")
    start = time.perf_counter()
    result = await asyncio.to_thread(work)
    wall = time.perf_counter() - start
    log(f"stage {folder.name}: finished in {wall:.0f}s: {json.dumps(result)[:300]}")
    return finish_stage(folder, params, result, wall)


async def train_proposers(spec: Any, out: Path, options: Callable[[str], dict],
                          log: Log, work: StageWork) -> dict[str, str]:
    """Run (or reuse) every stage; returns each arm's Proposer model string."""
    train = spec.training_spec()
    root = out / "stages"
    common = {"train": spec.tasks.train, "solver": spec.solver, "feedback": spec.feedback,
              "selection": spec.selection, "configs": {t: options(t) for t in spec.tasks.train}}
    p_collect = {**common, "teacher": train.teacher, "per_task": train.per_task,
                 "max_tokens": train.teacher_max_tokens,
                 "temperature": spec.proposer_temperature}
    collected = await run_stage(root / "collect", p_collect, lambda: work.collect(
        spec, train, root / "collect", options), log)
    # how often SFT saves does not change what it learns: not a parameter of the stage
    p_sft = {"after": p_collect, **{k: v for k, v in asdict(train).items()
                                    if (k.startswith("sft") and k != "sft_save_steps")
                                    or k in ("student", "lora")}}
    sft = await run_stage(root / "sft", p_sft, lambda: work.sft(train, root / "sft",
                                                                  collected), log)
    p_grpo = {"after": p_sft, **{k: v for k, v in asdict(train).items() if k.startswith(
        "grpo") or k in ("group_size", "student_max_tokens")}}
    grpo = await run_stage(root / "grpo", p_grpo, lambda: work.grpo(
        spec, train, root / "grpo", collected, sft), log)
    exported = await run_stage(root / "export", {"after": p_grpo}, lambda: work.export(
        train, root / "export", {"sft": sft["checkpoint"], "sft_rl": grpo["checkpoint"]}), log)
    models = {arm: f"local:{Path(path).resolve()}" for arm, path in exported["gguf"].items()}
    return {**models, "teacher": train.teacher}
