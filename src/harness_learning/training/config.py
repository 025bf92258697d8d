"""One config dataclass per trainer, TRL style: every field carries its help text in
`field(metadata={"help": ...})`, which the CLI turns into `--option` help."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class DataConfig:
    """How groups of proposals are read from execution logs and filtered."""

    min_group_size: int = field(
        default=2, metadata={"help": "Drop groups with fewer distinct completions than this."}
    )
    drop_flat_groups: bool = field(
        default=True,
        metadata={"help": "Drop groups whose rewards are all equal: they carry no GRPO signal."},
    )
    fold_duplicates: bool = field(
        default=True,
        metadata={"help": "Fold identical completions within a group into one (mean reward)."},
    )
    scale_by_std: bool = field(
        default=False,
        metadata={"help": "Divide group advantages by the group's reward std (GRPO); else only "
                  "mean-centre them (Dr. GRPO)."},
    )


@dataclass
class TrainConfig:
    """What every trainer shares: the model, where to write, the optimiser, LoRA."""

    model: str = field(
        default="smollm2",
        metadata={"help": "Model to train: 'smollm2' (the bundled GGUF), "
                  "'qwen2.5-coder-1.5b' (the fetched Proposer GGUF), a .gguf path (llama or "
                  "qwen2 architecture; rebuilt as a plain trainable model), a local Hugging Face "
                  "directory, or 'tiny' (a random 2-layer Llama with SmolLM2's tokenizer, for "
                  "smoke runs)."},
    )
    out: str = field(default="runs/train", metadata={"help": "Output directory."})
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate."})
    max_steps: int = field(default=10, metadata={"help": "Optimizer steps to run."})
    batch_size: int = field(
        default=4, metadata={"help": "Sequences (prompt + completion) per optimizer step."}
    )
    max_length: int = field(
        default=2048,
        metadata={"help": "Truncate prompt + completion to this many tokens (prompt cut on the "
                  "left, completion kept)."},
    )
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm."})
    lora: bool = field(default=True, metadata={"help": "Train LoRA adapters (peft) instead of "
                                                 "all weights."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha."})
    lora_dropout: float = field(default=0.0, metadata={"help": "LoRA dropout."})
    seed: int = field(default=0, metadata={"help": "Random seed."})
    save: bool = field(
        default=True,
        metadata={"help": "Save the trained model (LoRA merged) under OUT/checkpoint, servable "
                  "by vllm or transformers."},
    )


@dataclass
class SFTTrainConfig(TrainConfig):
    """Warm start: supervised fine-tuning on successful edits (valid, scored above parent)."""

    learning_rate: float = field(default=2e-5, metadata={"help": "AdamW learning rate."})
    num_epochs: float = field(
        default=1.0, metadata={"help": "Epochs over the SFT set (max_steps wins when > 0)."}
    )
    teacher: list[str] = field(
        default_factory=list,
        metadata={"help": "Teacher runs (repeatable): run directories, or folders of them as "
                  "`harness-learn collect-edits --out` writes, whose successful edits (valid, "
                  "scored above the parent) join the SFT set, whichever model wrote them."},
    )
    keep_ties: bool = field(
        default=False,
        metadata={"help": "Also learn valid edits that score as high as their parent: on a few "
                  "selection problems a teacher's edits often tie the seed, and a small student "
                  "needs the edit format first."},
    )
    bf16_cpu: bool = field(
        default=False,
        metadata={"help": "On CPU, hold the model in bfloat16 and checkpoint activations: one "
                  "step of the 1.5B Proposer at 1,024 tokens then peaked at 8.3 GB, where "
                  "float32 was killed at 15.8 GB (the LoRA adapter stays float32)."},
    )
    save_steps: int = field(
        default=0,
        metadata={"help": "Save a resumable checkpoint (the LoRA adapter, optimiser, random "
                  "states and data position) every this many steps under OUT/trainer, keeping "
                  "the last two; rerun with the same OUT to resume a killed run from the last "
                  "whole one, with the same batches and loss curve. 0: none (a killed run "
                  "starts over)."},
    )


@dataclass
class SolverSFTConfig(TrainConfig):
    """Co-Harness's idea: fine-tune the Solver on its own successful trajectories (the Solver
    calls of dev problems an evolved harness solved), so the pair can beat the harness alone."""

    out: str = field(default="runs/solver-sft", metadata={"help": "Output directory."})
    version: str = field(
        default="final",
        metadata={"help": "Whose trajectories: 'final' (the version each run ends on), "
                  "'lineage' (every version it adopted, the seed included), 'all' (every "
                  "version it evaluated), or a version sha (a prefix is enough)."},
    )
    min_score: float = field(
        default=1.0,
        metadata={"help": "A problem's Solver calls are learned when the harness scored at "
                  "least this on it (feedback and selection problems only: never test ones)."},
    )
    learning_rate: float = field(default=2e-4, metadata={"help": "AdamW learning rate."})
    max_steps: int = field(
        default=-1, metadata={"help": "Optimizer steps to run (-1: num_epochs decides)."}
    )
    num_epochs: float = field(default=2.0, metadata={"help": "Epochs over the trajectories."})
    max_length: int = field(
        default=1024,
        metadata={"help": "Truncate a Solver call (messages + reply) to this many tokens."},
    )


@dataclass
class GRPOOfflineConfig(TrainConfig, DataConfig):
    """Offline GRPO on logged groups with a token-level clipped policy-gradient loss."""

    epsilon: float = field(default=0.2, metadata={"help": "Lower clip range of the ratio."})
    epsilon_high: float = field(
        default=0.28, metadata={"help": "Upper clip range of the ratio (DAPO clip-higher)."}
    )
    beta: float = field(
        default=0.0,
        metadata={"help": "KL coefficient to the reference (the model before training); 0 skips "
                  "the reference model."},
    )
    recompute_logprobs: bool = field(
        default=False,
        metadata={"help": "Ignore logged completion log-probs and recompute them from the base "
                  "model at the start (always done when the log lacks them)."},
    )


@dataclass
class GRPOOnlineConfig(TrainConfig, DataConfig):
    """Online GRPO with TRL's GRPOTrainer: completions are applied and evaluated in the sandbox."""

    task: str = field(
        default="",
        metadata={"help": "Task the harnesses are evaluated on (evals.registry name); empty: the "
                  "task recorded in the log."},
    )
    num_generations: int = field(
        default=4, metadata={"help": "Completions per prompt (the GRPO group size)."}
    )
    max_completion_length: int = field(
        default=256, metadata={"help": "Tokens generated per completion."}
    )
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature."})
    micro_batch_size: int = field(
        default=0,
        metadata={"help": "Sequences per forward/backward pass, the step's batch accumulated "
                  "over them (0: the whole batch at once). With shared_prefix, a micro-batch of whole "
                  "groups runs each prompt once; without it, 8 Proposer prompts of ~2k tokens "
                  "at once ran out of memory on CPU, and 1 keeps it to one."},
    )
    shared_prefix: bool = field(
        default=True,
        metadata={"help": "Run each group's prompt once in generation and in the loss, its "
                  "key/value cache shared by the group's completions (training/shared_prefix.py); "
                  "false: TRL's own per-row forward."},
    )
    beta: float = field(default=0.0, metadata={"help": "KL coefficient (TRL's beta)."})
    loss_type: str = field(default="dapo", metadata={"help": "TRL loss type (dapo, grpo, dr_grpo, bnpo)."})
    num_problems: int = field(
        default=4, metadata={"help": "Selection problems each candidate is evaluated on."}
    )
    concurrency: int = field(
        default=4, metadata={"help": "Candidate evaluations run at once (async)."}
    )
    eval_timeout_s: float = field(
        default=120.0, metadata={"help": "Wall-clock limit per candidate evaluation."}
    )
    solver: str = field(
        default="local",
        metadata={"help": "Solver model spec the evaluated harnesses call (harnesses.llm; "
                  "'local' is the embedded SmolLM2 server)."},
    )
    use_vllm: bool = field(
        default=False, metadata={"help": "Generate with vLLM (GPU machines; TRL's use_vllm)."}
    )
    log_dir: str = field(
        default="",
        metadata={"help": "Run directory whose execution log receives each online group "
                  "(default OUT/log)."},
    )


def as_dict(config: Any) -> dict[str, Any]:
    """A JSON-able dict of a config (written next to every run's metrics)."""
    return {f.name: getattr(config, f.name) for f in fields(config)}
