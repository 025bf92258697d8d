"""Read an experiment's results back from its run directories' execution logs (log.sqlite).

Nothing else is read: a run's method, task and seed come from its `experiment_run` event, its
scores from the `test` evaluations of its adopted chain, its costs from the log's totals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning_lab.experiments.runner import RUN_EVENT
from harness_learning_lab.experiments.structure import Structure, analyze

LOG_FILE = RunDir.LOG


@dataclass
class RunRecord:
    meta: dict[str, Any]
    run_dir: str
    curve: list[tuple[int, float | None]]
    """(round, test score of the version in force after it); round 0 = the seed."""
    spent: dict[str, int]
    edits: int = 0
    """Proposals made (single-step: the N independent edits of the seed)."""
    edits_beating_parent: int = 0
    """Valid proposals whose selection score beat their parent's (the seed, in round 1)."""
    valid_edits: int = 0
    adopted: list[Structure] = field(default_factory=list)
    """Distinct versions adopted after the seed (those that parse)."""
    seed_structure: Structure | None = None
    seed_sha: str | None = None

    @property
    def method(self) -> str:
        return self.meta["method"]

    @property
    def final(self) -> float | None:
        return self.curve[-1][1] if self.curve else None

    @property
    def oracle(self) -> float | None:
        scores = [s for _, s in self.curve if s is not None]
        return max(scores) if scores else None


def run_dirs(out: str | Path) -> list[Path]:
    return sorted(p.parent for p in Path(out).glob(f"runs/*/*/*/{LOG_FILE}"))


def read_run(run_dir: Path) -> RunRecord | None:
    """One run's record, or None while the run has not finished."""
    store = SQLiteLogStore(run_dir, read_only=True)
    try:
        events = list(store.iter_events(kinds=[RUN_EVENT]))
        if not events:
            return None
        meta = dict(events[-1].payload)
        lineage = store.lineage()
        tests = _test_means(store)
        curve = [(step.round, tests.get(step.sha)) for step in lineage]
        proposals = list(store.iter_proposals())
        seed_sha = lineage[0].sha if lineage else None
        adopted = []
        for sha in dict.fromkeys(step.sha for step in lineage[1:]):
            if sha != seed_sha and (found := analyze(store.get_version_source(sha))) is not None:
                adopted.append(found)
        return RunRecord(
            meta=meta, run_dir=str(run_dir), curve=curve, spent=store.spent(),
            edits=len(proposals), valid_edits=sum(p.valid for p in proposals),
            edits_beating_parent=sum(
                p.valid and p.selection_score is not None and p.parent_score is not None
                and p.selection_score > p.parent_score for p in proposals),
            adopted=adopted,
            seed_structure=analyze(store.get_version_source(seed_sha)) if seed_sha else None,
            seed_sha=seed_sha)
    finally:
        store.close()


def _test_means(store: SQLiteLogStore) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for ev in store.iter_evaluations(purpose="test"):
        if ev.result.score is not None:
            scores.setdefault(ev.sha, []).append(ev.result.score)
    return {sha: sum(v) / len(v) for sha, v in scores.items()}


def collect(out: str | Path) -> tuple[list[RunRecord], list[str]]:
    """Finished runs (sorted by method, task, seed) and the directories of unfinished ones."""
    records, unfinished = [], []
    for run_dir in run_dirs(out):
        record = read_run(run_dir)
        if record is None:
            unfinished.append(str(run_dir.relative_to(out)))
        else:
            records.append(record)
    records.sort(key=lambda r: (r.meta["method"], r.meta["task"], r.meta["seed"]))
    return records, unfinished
