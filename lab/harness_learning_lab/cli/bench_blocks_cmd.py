"""`harness-learn bench blocks`, `proposer-prompt`, `memorisation` and `experiment-grid`: the
search issue's, the memorisation check's and the Ray grid's benchmarks (lab code, loaded
lazily)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("blocks")
def bench_blocks(
    track: Annotated[str, typer.Option(help="reasoning (4 reasoning-gym tasks) or qa (MuSiQue; --tasks 2wiki,hotpotqa too).")] = "reasoning",
    n: Annotated[int, typer.Option(help="Held-out problems per task (the docs' table: 24 reasoning, 12 QA).")] = 24,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated tasks instead of the track's.")] = None,
    blocks: Annotated[str | None, typer.Option(help="Comma-separated blocks instead of the track's.")] = None,
    solver: Annotated[str, typer.Option(help="Solver model.")] = "local:qwen2.5-coder-1.5b",
    out: Annotated[Path, typer.Option(help="Results per (task, arm), resumed on a rerun.")] = Path("runs/bench-blocks"),
    index: Annotated[Path | None, typer.Option(help="QA: the BM25 index directory (built from the shared data's closed corpus if unset).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the rows as JSON.")] = False,
) -> None:
    """The seed against the seed with each block applied, same problems and Solver: mean, paired
    bootstrap 95% interval of the gain, Solver calls per problem."""
    from harness_learning_lab.bench import blocks as bench

    if track not in ("reasoning", "qa"):
        raise typer.BadParameter(f"--track {track!r}: choose reasoning or qa")
    chosen = tasks.split(",") if tasks else (list(bench.REASONING_TASKS) if track == "reasoning"
                                             else ["musique"])
    arms = blocks.split(",") if blocks else list(bench.REASONING_BLOCKS if track == "reasoning"
                                                 else bench.QA_BLOCKS)
    options = {}
    if track == "qa":
        data = Path(os.environ.get("HARNESS_LEARNING_DATA") or Path.cwd().parent / "shared" / "data")
        options = {t: qa_options(t, data, index, out) for t in chosen}
    params = {"temperature": 0.0, "max_tokens": 256}
    rows = bench.run(chosen, arms, n, out, solver, params, options,
                     log=lambda m: print(m, file=sys.stderr, flush=True))
    print(bench.table(rows))
    if as_json:
        print(json.dumps(rows))


def qa_options(task: str, data: Path, index: Path | None, out: Path) -> dict:
    """A QA task's sample file and the BM25 index of the closed corpus its questions are
    answerable from (`evals.samples.SAMPLE_CORPORA`), built once into `out`."""
    from harness_learning.evals.samples import SAMPLE_CORPORA, SAMPLE_FILES
    from harness_learning.retrieval.build import build_index

    if task not in SAMPLE_FILES:
        raise typer.BadParameter(f"--tasks {task!r}: the qa track knows {', '.join(SAMPLE_FILES)}")
    source = data / SAMPLE_FILES[task]
    kind, corpus = SAMPLE_CORPORA[task]
    if not source.exists() or not (data / corpus).exists():
        raise typer.BadParameter(f"{source} not found: set HARNESS_LEARNING_DATA")
    if index is None:
        index = out / f"index-{task}"
    build_index(kind, data / corpus, index, backend="bm25")  # resumes: a built index is reused
    return {"path": str(source), "index_dir": str(index)}


@bench_app.command("proposer-prompt")
def bench_proposer_prompt(
    out: Annotated[Path, typer.Option(help="Results per (report, prompt), resumed on a rerun.")] = Path("runs/bench-proposer-prompt"),
    proposer: Annotated[str, typer.Option(help="Proposer model.")] = "local:qwen2.5-coder-1.5b",
    solver: Annotated[str, typer.Option(help="Solver of the candidates' evaluations.")] = "local:smollm2-135m",
    collect: Annotated[bool, typer.Option(help="Write the committed report set anew (the seed on feedback samples of 3 reasoning tasks and MuSiQue) instead of answering it.")] = False,
    limit: Annotated[int | None, typer.Option(help="Only the first N reports.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the summary as JSON.")] = False,
) -> None:
    """The old Proposer prompt (whole program, SEARCH/REPLACE) against the new (a focused edit of
    one node function, the blocks as a menu, a resample and a repair turn) on the committed
    reports: valid rate over every completion, and the share of valid candidates that change
    a selection prediction."""
    import asyncio

    from harness_learning_lab.bench import proposer_prompt as bench

    data = Path(os.environ.get("HARNESS_LEARNING_DATA") or Path.cwd().parent / "shared" / "data")
    index = out / "index-musique"
    qa_options("musique", data, index, out)
    source = data / "musique" / "musique_train.json"
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if collect:
        rows = asyncio.run(bench.collect(solver, source, index, log))
        bench.REPORTS.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{len(rows)} reports written to {bench.REPORTS}")
        return
    summary = bench.run(out, proposer, solver, source, index, limit, log)
    print(bench.table(summary))
    if as_json:
        print(json.dumps(summary))


@bench_app.command("memorisation")
def bench_memorisation(
    resamples: Annotated[int, typer.Option(help="Draws per protocol (cycled over the logged pairs).")] = 2600,
    runs: Annotated[list[Path] | None, typer.Option("--run", help="Logged run directories to read the honest harnesses from instead of the committed set (repeatable).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draws.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the rows as JSON.")] = False,
) -> None:
    """The memorisation check's false-positive rate on logged honest harnesses and its power
    against memorisers simulated from them (fractions 0.1-1 of the shown golds, three
    encodings), per split, with Clopper-Pearson intervals; and what the copy gains in
    selection."""
    from harness_learning_lab.bench import memorisation as bench

    if runs:
        pairs = [bench.Pair(r["name"], r["origin"], r["task"], tuple(r["parent"]),
                            tuple(r["candidate"])) for r in bench.collect(runs)]
    else:
        pairs = bench.load_pairs()
    if not pairs:
        raise typer.BadParameter("no logged (harness, parent) pair with 8 common problems")
    harnesses = {p.name.split(":")[-1] for p in pairs}
    print(f"{len(pairs)} logged (harness, parent) pairs, {len(harnesses)} distinct harnesses "
          f"({', '.join(sorted({p.origin for p in pairs}))}); {resamples} draws per protocol",
          file=sys.stderr)
    rows = bench.run(pairs, resamples, seed)
    print(bench.table(rows))
    if as_json:
        print(json.dumps(rows))


@bench_app.command("experiment-grid")
def bench_experiment_grid(
    latency: Annotated[float, typer.Option(help="Seconds per simulated model call (a remote endpoint's).")] = 0.5,
    seeds: Annotated[int, typer.Option(help="Seeds of the grid: two runs each (seed baseline, adaptive).")] = 2,
    repeats: Annotated[int, typer.Option(help="Repeats of each configuration, taken in turn.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: the figures as JSON.")] = False,
) -> None:
    """An experiment grid's wall time serially and on a local Ray cluster of 1 and 2 workers,
    against simulated models answering at a remote endpoint's latency."""
    from harness_learning_lab.bench import grid_ray as bench

    figures = bench.run(latency, seeds, repeats, log=lambda m: print(m, file=sys.stderr))
    print(bench.table(figures))
    if as_json:
        print(json.dumps(figures))
