"""SFT warm start: TRL's SFTTrainer on successful edits (valid, scored above their parent).

The set is conversational prompt-completion, so the loss falls on the completion only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()

import torch  # noqa: E402

from harness_learning.training.config import SFTTrainConfig  # noqa: E402
from harness_learning.training.data import FilterReport  # noqa: E402
from harness_learning.training.grpo_offline import TrainResult  # noqa: E402
from harness_learning.training.loading import (  # noqa: E402
    gguf_path,
    load_model,
    load_tokenizer,
    lora_config,
    rebuild_from_gguf,
    save_checkpoint,
)
from harness_learning.training.metrics import MetricsLog, metrics_callback  # noqa: E402
from harness_learning.training.resume import (  # noqa: E402
    check_same_run,
    checkpoint_step,
    resume_point,
)
from harness_learning.training.teacher import run_dirs_under, sft_dataset  # noqa: E402

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, TrainerCallback
    from trl import SFTTrainer

    from harness_learning.training.config import SolverSFTConfig, TrainConfig

    SFTConfigs = SFTTrainConfig | SolverSFTConfig
    """The configs TRL's SFTTrainer runs (both have `num_epochs`)."""


def trl_common(config: TrainConfig, out: Path) -> dict[str, Any]:
    """Arguments every TRL config of ours shares (CPU needs use_cpu, else bf16 fails)."""
    cpu = not torch.cuda.is_available()
    return dict(
        output_dir=str(out / "trainer"), max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size, learning_rate=config.learning_rate,
        max_grad_norm=config.max_grad_norm, logging_steps=1, save_strategy="no",
        report_to=[], seed=config.seed, use_cpu=cpu, bf16=not cpu,
        activation_checkpointing=not cpu, dataloader_num_workers=0,
    )


def train_sft(run_dirs: Sequence[str | Path], config: SFTTrainConfig,
              progress: bool = True) -> TrainResult:
    """Fine-tune on the SFT set of `run_dirs`; writes metrics, a PNG and a checkpoint."""
    run_dirs = [*map(Path, run_dirs), *run_dirs_under(config.teacher)]
    report = FilterReport()
    dataset = sft_dataset(run_dirs, report, config.keep_ties).select_columns(
        ["prompt", "completion"])
    return fit_sft(dataset, config, run_dirs, report, "SFT", progress)


def checkpointing(config: TrainConfig) -> dict[str, Any]:
    """The trainer's save arguments: every `save_steps` steps, the last two kept, or none."""
    steps = int(getattr(config, "save_steps", 0) or 0)
    if steps <= 0:
        return {"save_strategy": "no"}
    return {"save_strategy": "steps", "save_steps": steps, "save_total_limit": 2}


def _student(model: str, tokenizer: PreTrainedTokenizerBase, seed: int, bf16: bool
             ) -> PreTrainedModel:
    """The model to train; with `bf16`, a GGUF is rebuilt straight into bfloat16 (never whole
    in float32) and any other model cast to it."""
    if not bf16:
        return load_model(model, tokenizer, seed)
    gguf = gguf_path(model) if model != "tiny" else None
    return (rebuild_from_gguf(gguf, torch.bfloat16) if gguf is not None
            else load_model(model, tokenizer, seed).to(torch.bfloat16))


def sft_trainer(dataset: Dataset, config: SFTConfigs, tokenizer: PreTrainedTokenizerBase,
                callbacks: Sequence[TrainerCallback] = (), progress: bool = False) -> SFTTrainer:
    """TRL's SFTTrainer as every SFT stage of ours builds it. On a prompt-completion set TRL
    masks the prompt out of the labels (`completion_only_loss`) and runs the output layer only
    on labelled positions (its fused LM head): with a 152k-token vocabulary the full logits
    would be the step's largest tensor, and the prompt's were never used."""
    from trl import SFTConfig, SFTTrainer

    low = bool(getattr(config, "bf16_cpu", False)) and not torch.cuda.is_available()
    args = SFTConfig(
        **{**trl_common(config, Path(config.out)), **checkpointing(config),
           **({"activation_checkpointing": True} if low else {})},
        num_train_epochs=config.num_epochs, max_length=config.max_length,
        disable_tqdm=not progress, dataset_num_proc=None, completion_only_loss=True,
    )
    return SFTTrainer(
        model=_student(config.model, tokenizer, config.seed, low), args=args,
        train_dataset=dataset, processing_class=tokenizer,
        peft_config=lora_config(config.lora_r, config.lora_alpha, config.lora_dropout)
        if config.lora else None, callbacks=list(callbacks),
    )


def fit_sft(dataset: Dataset, config: SFTConfigs, run_dirs: Sequence[Path],
            report: FilterReport | None, title: str, progress: bool = True,
            callbacks: Sequence[TrainerCallback] = ()) -> TrainResult:
    """TRL's SFTTrainer on a conversational prompt-completion set (`config`: a TrainConfig
    with num_epochs); the loss falls on the completions. With `save_steps`, a rerun on the same
    OUT resumes from the last whole checkpoint (`training.resume`)."""
    out = Path(config.out)
    tokenizer = load_tokenizer(config.model)
    lengths = [len(tokenizer(tokenizer.apply_chat_template(
        row["prompt"] + row["completion"], tokenize=False))["input_ids"]) for row in dataset]
    too_long = [n for n in lengths if n > config.max_length]
    if len(too_long) == len(dataset):
        raise ValueError(f"every SFT example is longer than --max-length {config.max_length} "
                         "tokens; TRL truncates on the right, which would cut off every "
                         "completion: raise --max-length")
    run_config = {**config.model_dump(), "logs": list(map(str, run_dirs))}
    resume = None
    if checkpointing(config)["save_strategy"] != "no" and any(
            (out / "trainer").glob("checkpoint-*")):
        check_same_run(out, run_config)
        resume = resume_point(out / "trainer")
    log = MetricsLog(out, keep_through=checkpoint_step(resume))
    (out / "config.json").write_text(json.dumps(run_config, indent=1))
    trainer = sft_trainer(dataset, config, tokenizer, [metrics_callback(log), *callbacks],
                          progress)
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    png = log.plot(f"{title}: {config.model}")
    ckpt = (save_checkpoint(trainer.model, tokenizer, out / "checkpoint")
            if config.save else None)
    return TrainResult(out, log.path, png, ckpt, log.summary(), report)
