"""`harness-learn bench sft-step` (registered on import): seconds per LoRA SFT step of the
Proposer by sequence length and loss setting (`harness_learning_lab.bench.sft_step`)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("sft-step")
def bench_sft_step(
    model: Annotated[str, typer.Option(help="Student: 'qwen2.5-coder-1.5b' (the shipped Proposer), 'smollm2', a .gguf, or 'tiny'.")] = "qwen2.5-coder-1.5b",
    lengths: Annotated[str, typer.Option(help="Sequence lengths in tokens (prompt + completion), comma-separated.")] = "512,1024",
    completion: Annotated[int, typer.Option(help="Completion tokens of each sequence (at most half of it); the rest is prompt.")] = 300,
    settings: Annotated[str, typer.Option(help="Loss settings, comma-separated: full (logits everywhere), completion (logits on the completion only: what the SFT stage does), prompt_cached (the prompt once without gradient).")] = "prompt_cached,completion,full",
    steps: Annotated[int, typer.Option(help="Timed steps per row (their mean is reported).")] = 1,
    dtype: Annotated[str, typer.Option(help="bf16 or fp32 (fp32 at 1,024 tokens was killed at 15.8 GB on 2 cores / 24 GB).")] = "bf16",
    lora_r: Annotated[int, typer.Option(help="LoRA rank (on all 7 projections, alpha 2r).")] = 16,
    threads: Annotated[int, typer.Option(help="torch intra-op threads (the SFT stage uses 1).")] = 1,
    checkpointing: Annotated[bool, typer.Option("--checkpointing/--no-checkpointing", help="Gradient checkpointing (less memory, more compute).")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """One LoRA SFT step of the Proposer, timed by sequence length and loss setting: where the
    cost of training on 2 cores goes, and what completion-only logits and a cached prompt save."""
    import torch

    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning_lab.bench import sft_step

    chosen = tuple(s.strip() for s in settings.split(",") if s.strip())
    if bad := [s for s in chosen if s not in sft_step.SETTINGS] or not chosen:
        raise CliError(f"unknown setting(s) {', '.join(bad or ['(none)'])}",
                       f"choose from {', '.join(sft_step.SETTINGS)}", EXIT_USAGE)
    try:
        sizes = [int(n) for n in lengths.split(",") if n.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 8 or dtype not in ("bf16", "fp32") or steps < 1:
        raise CliError(f"--lengths {lengths!r}, --dtype {dtype!r}, --steps {steps}",
                       "give lengths of 8 tokens or more (e.g. 512,1024), bf16 or fp32, "
                       "and at least 1 step", EXIT_USAGE)
    torch.set_num_threads(threads)
    figures = sft_step.run(model, sizes, chosen, completion=completion, steps=steps,
                           dtype=dtype, lora_r=lora_r, checkpointing=checkpointing,
                           log=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(sft_step.table(figures), flush=True)
    if as_json:
        print(json.dumps(figures))
