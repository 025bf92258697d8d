"""`harness-learn bench task-types`: the seed against the interpreter block on many
reasoning-gym types, written as `experiments/task_types.toml` (lab code, loaded lazily)."""

from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import bench_app

TYPES = ("rg:products,rg:chain_sum,rg:basic_arithmetic,rg:letter_counting,rg:gcd,rg:lcm,"
         "rg:prime_factorization,rg:count_bits,rg:fraction_simplification,rg:decimal_arithmetic,"
         "rg:power_function,rg:number_sorting,rg:spell_backward,rg:word_sorting,"
         "rg:calendar_arithmetic,rg:base_conversion,rg:bitwise_arithmetic,rg:count_primes,"
         "rg:leg_counting,rg:simple_equations")


@bench_app.command("task-types")
def bench_task_types(
    tasks: Annotated[str, typer.Option(help="Comma-separated reasoning-gym types to measure.")] = TYPES,
    n: Annotated[int, typer.Option(help="Held-out problems per type.")] = 24,
    solver: Annotated[str, typer.Option(help="Solver model.")] = "local:qwen2.5-coder-1.5b",
    out: Annotated[Path, typer.Option(help="Results per (type, arm), resumed on a rerun.")] = Path("runs/bench-task-types"),
    write: Annotated[Path | None, typer.Option(help="Write the classed types here (experiments/task_types.toml); only once every type is measured.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the entries as JSON.")] = False,
) -> None:
    """Each type's seed against the seed with the interpreter block (same problems and Solver),
    classed by the gain's paired bootstrap 95% interval: headroom (gain >= 0.25, interval
    above 0), modest, or control (interval includes 0)."""
    from harness_learning_lab.bench import blocks, task_types

    chosen = [t for t in tasks.split(",") if t]
    if not chosen or any(not t.startswith("rg:") for t in chosen):
        raise typer.BadParameter(f"--tasks {tasks!r}: give reasoning-gym types as rg:<name>")
    params = {"temperature": 0.0, "max_tokens": 256}
    rows = blocks.run(chosen, [task_types.ARM], n, out, solver, params, {},
                      log=lambda m: print(m, file=sys.stderr, flush=True))
    items = task_types.entries(rows)
    print(task_types.table(items))
    if write is not None:
        header = (f"The reasoning-gym types the learning experiments draw from, fixed before any\n"
                  f"learner is scored: each type's seed (reasoning_direct) against the seed with the\n"
                  f"interpreter block, n={n} held-out problems, Solver {solver}, temperature 0.\n"
                  f"class: headroom (gain >= {task_types.HEADROOM}, paired bootstrap 95% interval\n"
                  f"above 0), modest (above 0, smaller), control (interval includes 0 or below).\n"
                  f"Written {_dt.date.today()} by: harness-learn bench task-types --n {n} --write ...")
        task_types.write(items, write, header)
        print(f"{len(items)} types written to {write}", file=sys.stderr)
    if as_json:
        print(json.dumps(items))
