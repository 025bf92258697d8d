"""Teacher edits for SFT: successful edits (valid, scored above their parent) from any run's
log, whichever model wrote them, and what the SFT set left out and why.

`harness-learn collect-edits` writes one run directory per task under its `--out` folder, so a
teacher path may be a run directory or a folder of run directories.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness_learning.training.data import (
    FilterReport,
    LogError,
    Proposal,
    is_success,
    read_proposals,
    sft_rows,
)

LOG_FILE = "log.sqlite"


def run_dirs_under(paths: Sequence[str | Path]) -> list[Path]:
    """Each path as a run directory, or the run directories directly inside it (sorted)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if (path / LOG_FILE).is_file():
            out.append(path)
            continue
        inside = sorted(p for p in path.iterdir() if (p / LOG_FILE).is_file()) \
            if path.is_dir() else []
        if not inside:
            raise LogError(f"{path}: neither a run directory (no {LOG_FILE}) nor a folder of "
                           "run directories; give what `harness-learn collect-edits --out` or "
                           "`adapt --run-dir` wrote")
        out.extend(inside)
    return out


def sft_notes(proposals: Iterable[Proposal], kept: int, ties: bool = False) -> list[str]:
    """Per run: how many proposals were read, how many became SFT examples, and why the
    others did not."""
    by_run: dict[str, Counter[str]] = {}
    for p in proposals:
        counts = by_run.setdefault(p.run, Counter())
        counts["read"] += 1
        if is_success(p, ties):
            counts["successful"] += 1
        elif not p.valid:
            counts["invalid"] += 1
        elif p.selection_score is None or p.parent_score is None:
            counts["unscored"] += 1
        else:
            counts["below the parent" if ties else "not above the parent"] += 1
    notes = []
    for run, c in by_run.items():
        why = ", ".join(f"{c[k]} {k}" for k in ("invalid", "not above the parent",
                                                "below the parent", "unscored") if c[k])
        notes.append(f"{run}: {c['read']} proposals, {c['successful']} successful edits"
                     + (f"; left out {why}" if why else ""))
    total = sum(c["successful"] for c in by_run.values())
    if total > kept:
        notes.append(f"folded {total - kept} duplicate successful edits (same prompt and text)")
    return notes


def sft_dataset(run_dirs: Sequence[str | Path], report: FilterReport | None = None,
                ties: bool = False) -> Any:
    """The SFT set as a Hugging Face `datasets.Dataset` (TRL conversational prompt-completion);
    `report` receives what was read and left out, per run; `ties` also keeps valid edits that
    score as high as their parent."""
    from datasets import Dataset

    proposals = read_proposals(run_dirs, report)
    rows = sft_rows(proposals, ties)
    notes = sft_notes(proposals, len(rows), ties)
    if report is not None:
        report.runs, report.proposals_read, report.proposals_kept = (
            len(run_dirs), len(proposals), len(rows))
        report.notes += notes
    if not rows:
        raise LogError(f"no successful edits (valid, scored {'at least as high as' if ties else 'above'} parent) in "
                       f"{', '.join(map(str, run_dirs))}: " + "; ".join(notes or ["no proposals"]))
    return Dataset.from_list(rows)
