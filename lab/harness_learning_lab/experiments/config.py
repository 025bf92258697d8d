"""An experiment: one checked-in TOML file per track, with a `[paper]` and a `[smoke]` scale.

Top-level keys are shared; the chosen scale's table overrides them (a nested table such as
`[smoke.tasks]` overrides key by key). Unknown keys are errors naming the file and the key, so a
typo never silently falls back to a default.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning_lab.scaled_toml import at_scale, read_toml

SCALES = ("paper", "smoke")
TRACKS = ("reasoning", "qa")


@dataclass
class Tasks:
    train: list[str] = field(default_factory=list)
    """Proposer training types: untrained-Proposer runs on them give the training logs."""
    test: list[str] = field(default_factory=list)
    """Unseen types: every method is adapted and tested on each of them."""
    hard: list[str] = field(default_factory=list)
    """A subset of `test` reported apart."""


@dataclass
class ExperimentSpec:
    name: str
    track: str
    scale: str = "paper"
    solver: str = "local"
    proposer: str = "local"
    trained_proposer: str = ""
    """Model string of a trained Proposer (e.g. `openai/proposer` served by vLLM); empty: the
    trained row says "not trained"."""
    seeds: list[int] = field(default_factory=lambda: [0])
    policy: str = "strict"
    race: dict[str, Any] = field(default_factory=dict)
    """Policy racing's rule (`AdaptConfig.race`), e.g. `race = {fractions = [0.3125, 0.75, 1],
    keep = [0.5, 0.75]}`; empty: the default rule."""
    rounds: int = 5
    candidates: int = 1
    feedback: int = 25
    selection: int = 25
    split: str = "paper"
    """`AdaptConfig.split`: the paper's draws, which its figures assume; "held_out" scores only
    problems no report of the run shows (sizes must then fit the dev pool together)."""
    n_dev: int | None = None
    n_test: int | None = None
    compare_candidates: int = 0
    """N of single-step (1 round x N candidates) against relay (N rounds x 1); 0 skips it."""
    baselines: list[str] = field(default_factory=lambda: ["seed", "tool_loop"])
    solver_max_tokens: int = 1024
    proposer_max_tokens: int = 2048
    proposer_temperature: float = 0.7
    concurrency: int = 8
    datasets: dict[str, str] = field(default_factory=dict)
    """QA: dataset file per task, relative to the data folder (default: its bundled sample)."""
    corpora: dict[str, list[str]] = field(default_factory=dict)
    """QA: [corpus kind, file] per task; a BM25 index of it is built into the output folder."""
    task_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Reasoning: a task type's generator config (reasoning-gym's), e.g. one-digit sums for a
    135M Solver; absent: the generator's defaults."""
    training: dict[str, Any] = field(default_factory=dict)
    """Train a Proposer first (`stages.TrainingSpec`'s keys); empty: no training stages."""
    tasks: Tasks = field(default_factory=Tasks)

    def __post_init__(self) -> None:
        if self.track not in TRACKS:
            raise ValueError(f"track must be one of {TRACKS}, not {self.track!r}")
        if not self.tasks.test:
            raise ValueError("tasks.test is empty: nothing to run")
        stray = sorted(set(self.tasks.hard) - set(self.tasks.test))
        if stray:
            raise ValueError(f"tasks.hard {stray} are not in tasks.test")
        if not self.seeds:
            raise ValueError("seeds is empty")
        self.race_rule()  # a bad rule fails when the file is read, not rounds into a run
        if self.training:
            self.training_spec()  # unknown or bad keys fail here too

    def training_spec(self) -> Any:
        """The `[training]` table as a `stages.TrainingSpec` (None when absent)."""
        if not self.training:
            return None
        from harness_learning_lab.experiments.stages import TrainingSpec

        shared = sorted(set(self.tasks.train) & set(self.tasks.test))
        if shared:
            raise ValueError(f"training and held-out task types must be disjoint: {shared} "
                             "are in both tasks.train and tasks.test")
        if not self.tasks.train:
            raise ValueError("[training] needs tasks.train: the types the Proposer trains on")
        return TrainingSpec.from_dict(self.training)

    def race_rule(self) -> RaceRule:
        return RaceRule.from_dict(self.race)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def load_spec(path: str | Path, scale: str = "paper") -> ExperimentSpec:
    """Read `path` at `scale` ("paper" or "smoke")."""
    path = Path(path)
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, not {scale!r}")
    merged = at_scale(read_toml(path, "experiment config"), SCALES, scale, path, required=False)
    known = {f.name for f in fields(ExperimentSpec)} - {"scale"}
    unknown = sorted(set(merged) - known)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; known: {sorted(known)}")
    task_data = merged.pop("tasks", {})
    bad = sorted(set(task_data) - {f.name for f in fields(Tasks)})
    if bad:
        raise ValueError(f"{path}: unknown key(s) in [tasks]: {bad}; known: train, test, hard")
    try:
        return ExperimentSpec(**merged, scale=scale, tasks=Tasks(**task_data))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path} [{scale}]: {err}") from None
