"""The Proposer's training from execution logs (docs/ARCHITECTURE.md, "Rewards" and "The store").

- `data`: groups of proposals per prompt read from run directories, filters, GRPO and SFT sets
  as Hugging Face datasets;
- `loss`: the offline GRPO loss (token-level clipped policy gradient against logged log-probs);
- `grpo_offline`, `grpo_online` (TRL GRPOTrainer, sandboxed evaluation as reward), `sft` (TRL
  SFTTrainer): the trainers, each configured by one dataclass in `config`;
- `models`: the SmolLM2 GGUF rebuilt as a trainable Llama, LoRA, checkpoints;
- `metrics`: metrics.jsonl and metrics.png per run; `serve`: a checkpoint as the Proposer.

Imported by nothing but the CLI (`harness-learn train ...`).
"""
