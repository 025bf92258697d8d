"""The final judgement of a run: the seed and each round's selected version on held-out test
problems, a plot of selection and test score per round, and the diff of each adopted version."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import evaluate_cached
from harness_learning.graphs.adapter.run import keep_experience, load_config
from harness_learning.harnesses.rundir import RunDir


@dataclass
class RoundScore:
    round: int
    sha: str
    selection: float | None
    test: float
    completed: float


@dataclass
class FinalSummary:
    rows: list[RoundScore]
    plot_path: Path
    diffs_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def table(self) -> Table:
        table = Table(title="held-out test score per round (round 0 = seed)")
        for col in ("round", "version", "selection", "test", "completed"):
            table.add_column(col)
        for r in self.rows:
            sel = "-" if r.selection is None else f"{r.selection:.3f}"
            table.add_row(str(r.round), r.sha[:12], sel, f"{r.test:.3f}", f"{r.completed:.0%}")
        return table

    def to_json(self) -> dict[str, Any]:
        return {"seed_score": self.rows[0].test, "final_score": self.rows[-1].test,
                "rounds": len(self.rows) - 1,
                "per_round": [{"round": r.round, "sha": r.sha, "selection": r.selection,
                               "test": r.test} for r in self.rows], **self.extra}


async def final_evaluation(run_dir: str | Path, n: int = 0, console=None,
                           task: Task | None = None, solver: str = "",
                           store: str = "", ends_only: bool = False) -> FinalSummary:
    """Each lineage version on the held-out test problems; `task` is the run's task when the
    caller has opened it already (the CLI checks it first), so it is not loaded twice.
    `ends_only`: the seed and the final version alone (the gain, without paying for the
    versions in between; the demo's time budget).

    `solver` replaces the run's Solver (e.g. one `train solver-sft` fine-tuned): its results
    are kept apart from the run's own (purpose `test@SOLVER`), and so are its plot and diffs.
    `store` replaces the store URL the run's config names (`--store`)."""
    run = RunDir.open(run_dir)
    config = load_config(run)
    if store:
        config = config.replace(store=store)
    purpose, plot, diffs = "test", run.plot, run.diffs
    if solver:
        config = config.replace(solver=solver)
        purpose = f"test@{solver}"
        from harness_learning.harnesses.llm.models import short_model

        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(short_model(solver)).stem).strip("-")
        plot = plot.with_name(f"{plot.stem}-{slug}{plot.suffix}")
        diffs = diffs.with_name(f"{diffs.stem}-{slug}{diffs.suffix}")
    async with AdapterContext.from_config(config, task=task) as ctx:
        problems = ctx.task.test()
        problems = problems[:n] if n else problems
        lineage = await ctx.store.alineage()  # [(round, sha, selection score)], round 0 = seed
        if ends_only and len(lineage) > 2:
            lineage = [lineage[0], lineage[-1]]
        rows: list[RoundScore] = []
        for round_, sha, selection in lineage:
            if console is not None:
                console.print(f"testing round {round_} version {sha[:12]} on {len(problems)} problems")
            # the held-out measure of a finished run: the run's budgets bound its adaptation
            result = await evaluate_cached(ctx, sha, problems, purpose, -1, budgeted=False)
            rows.append(RoundScore(round_, sha, selection, result.mean_score,
                                   result.completed_fraction))
        plot_path = plot_rounds(rows, plot, title=plot_title(config, run.path))
        diffs.write_text(await _adopted_diffs(ctx, rows), encoding="utf-8")
        if not solver:  # the held-out gains just measured join the library's outcomes
            await keep_experience(ctx)
    return FinalSummary(rows, plot_path, diffs)


async def _adopted_diffs(ctx: AdapterContext, rows: list[RoundScore]) -> str:
    parts = []
    for before, after in zip(rows, rows[1:], strict=False):
        if before.sha == after.sha:
            continue
        old = (await ctx.store.aget_version_source(before.sha)).splitlines(keepends=True)
        new = (await ctx.store.aget_version_source(after.sha)).splitlines(keepends=True)
        parts.append(f"# round {after.round}: {before.sha[:12]} -> {after.sha[:12]}\n")
        parts.extend(difflib.unified_diff(old, new, f"round{before.round}.py", f"round{after.round}.py"))
    return "".join(parts) or "# no version was adopted\n"


def plot_title(config, run_dir: Path) -> str:
    """Task, models and run, so a plot read on its own says what it shows."""
    from harness_learning.harnesses.llm.models import short_model

    return (f"{config.task} · solver {short_model(config.solver)} · proposer "
            f"{short_model(config.proposer)} · run {Path(run_dir).resolve().name}")


def plot_rounds(rows: list[RoundScore], path: Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [r.round for r in rows]
    ax.plot(xs, [r.test for r in rows], marker="o", label="test (held out)")
    sel = [(r.round, r.selection) for r in rows if r.selection is not None]
    if sel:
        ax.plot([x for x, _ in sel], [y for _, y in sel], marker="s", label="selection")
    ax.set_title(f"Held-out test and selection score per round\n{title}", fontsize=9)
    ax.set_xlabel("round (0 = seed)")
    ax.set_ylabel("mean score")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(xs)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
