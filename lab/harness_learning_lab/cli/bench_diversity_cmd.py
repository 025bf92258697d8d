"""`harness-learn bench sample-diversity` (registered on import): different completions a
Proposer writes from a run's logged prompts, by temperature
(`harness_learning_lab.bench.sample_diversity`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("sample-diversity")
def bench_sample_diversity(
    run_dir: Annotated[Path, typer.Argument(help="A run whose log holds Proposer prompts (e.g. an SFT experiment's student arm).")],
    model: Annotated[str, typer.Option(help="The Proposer to sample: a .gguf (a trained student), 'local', or any model spec.")] = "local",
    temperatures: Annotated[str, typer.Option(help="Sampling temperatures, comma-separated.")] = "0.7,1.0,1.3",
    samples: Annotated[int, typer.Option(help="Samples per prompt and temperature (a GRPO group's size).")] = 4,
    prompts: Annotated[int, typer.Option(help="Distinct logged prompts to sample, in log order.")] = 1,
    max_tokens: Annotated[int, typer.Option(help="Completion limit of each sample.")] = 768,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the rows as JSON.")] = False,
) -> None:
    """Whether a Proposer's samples of one prompt differ at all: a GRPO group of identical
    completions has zero reward variance, so no advantage and no gradient. Sized before an RL
    phase is run."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning_lab.bench import sample_diversity

    try:
        temps = [float(t) for t in temperatures.split(",") if t.strip()]
    except ValueError:
        temps = []
    if not temps or min(temps) < 0 or samples < 1 or prompts < 1 or max_tokens < 1:
        raise CliError(f"--temperatures {temperatures!r}, --samples {samples}, --prompts {prompts}, "
                       f"--max-tokens {max_tokens}",
                       "give temperatures of 0 or more (e.g. 0.7,1.0) and counts of at least 1",
                       EXIT_USAGE)
    if not (run_dir / "log.sqlite").is_file():
        raise CliError(f"{run_dir} holds no run log (log.sqlite)",
                       "give a run directory written by `harness-learn adapt`", EXIT_USAGE)
    try:
        rows = sample_diversity.run(run_dir, model, temps, samples, prompts, max_tokens,
                                    log=lambda msg: print(msg, file=sys.stderr, flush=True))
    except ValueError as exc:
        raise CliError(str(exc), "give a run whose Proposer is a model, not operators only",
                       EXIT_USAGE) from exc
    print(sample_diversity.table(rows, model), flush=True)
    if as_json:
        print(json.dumps(sample_diversity.as_dicts(rows)))
