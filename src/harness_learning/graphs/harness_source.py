"""Which harness source a reference names: a seed, a harness file, or a version of a run
directory (with the task and Solver that run used). `graphs.embed` serves what this finds."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class HarnessSource:
    """A harness's source text and where it came from (a run directory knows its task and models)."""

    source: str
    origin: str
    task: str | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    solver: str | None = None
    config: Any = None
    """The run's `AdaptConfig` for a run directory (its tools are reopened from it)."""

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()


def resolve_harness(ref: str | Path, version: str = "current") -> HarnessSource:
    """A seed name, a harness file, or a run directory (its `version`: `current` = the one the
    adapter holds now, `best` = the highest selection score of the adopted chain, or a sha
    prefix of any stored version)."""
    from harness_learning.harnesses.seeds import SEEDS, seed_source

    if isinstance(ref, str) and ref in SEEDS:
        return HarnessSource(seed_source(ref), f"seed {ref}")
    path = Path(ref).expanduser()
    if path.is_dir():
        return _from_run_dir(path, version)
    if path.is_file():
        return HarnessSource(path.read_text(encoding="utf-8"), f"file {path}")
    raise FileNotFoundError(f"harness {str(ref)!r} is not a seed ({', '.join(SEEDS)}), "
                            "a harness file or a run directory")


def _from_run_dir(path: Path, version: str) -> HarnessSource:
    from harness_learning.graphs.adapter.inputs import task_args
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.harnesses.rundir import RunDir

    config = load_config(path)  # raises, naming config.json, if this is no run directory
    with RunDir(path).open_store() as store:
        lineage = store.lineage()
        if version in ("current", "best"):
            if not lineage:
                raise LookupError(f"run directory {path} holds no harness version yet")
            step = lineage[-1] if version == "current" else max(
                lineage, key=lambda s: (s.selection_score if s.selection_score is not None
                                        else -1.0, s.round))
            sha, label = step.sha, f"round {step.round}"
        else:
            found = [v.sha for v in store.iter_versions() if v.sha.startswith(version)]
            if len(found) != 1:
                raise LookupError(f"run directory {path}: version {version!r} matches "
                                  f"{len(found)} stored versions (want exactly one)")
            sha, label = found[0], "by sha"
        source = store.get_version_source(sha)
    task, options = task_args(config, serving=True)  # the stored data copy, the run's options
    return HarnessSource(source, f"run {path} version {sha[:12]} ({label})", task, options,
                         config.solver, config)


__all__ = ["HarnessSource", "resolve_harness"]
