"""`harness_learning.adapt(...)`: adapt a harness in one call, in the spirit of GEPA's
`optimize`, and get back the best version with its scores and `.load()`.

    import harness_learning as hl
    result = hl.adapt(harness="my_harness.py", trainset=[{"question": ..., "answer": ...}],
                      metric="numeric:0.01", tools=[lookup], rounds=1, run_dir="runs/mine")
    graph = result.load()                 # the best version, compiled in a sandbox worker
    graph.invoke({"question": "..."})

Everything a run needs is written into `run_dir` (config, the data as `trainset.jsonl`, the
start harness, copies of `.py` files named by reference), so `harness-learn resume/eval RUN_DIR`
and `load_harness(RUN_DIR)` work on it afterwards. A metric or tool passed as a Python object
that cannot be re-imported by name is recorded as `live:NAME`: reopening that run from
elsewhere needs it passed again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_learning.evals.custom.imports import reference_of
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.inputs import INPUTS_DIR, LIVE_PREFIX

TRAINSET_FILE = "trainset.jsonl"


@dataclass
class AdaptResult:
    """The outcome of `adapt`: the best adopted version and the chain of selection scores."""

    run_dir: Path
    best_sha: str
    best_round: int
    best_score: float | None
    """Mean selection score of the best version, in the round it was measured."""
    seed_score: float | None
    lineage: list[tuple[int, str, float | None]]
    """(round, version sha, selection score) of the adopted chain; round 0 is the start."""
    stop_reason: str | None
    live: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def source(self) -> str:
        from harness_learning.harnesses.rundir import RunDir

        with RunDir(self.run_dir).open_store() as store:
            return store.get_version_source(self.best_sha)

    def load(self, **options: Any) -> Any:
        """The best version as a compiled graph running in a sandbox worker (see
        `load_harness`), with the run's Solver and tools."""
        from harness_learning.graphs.adapter.inputs import open_tools
        from harness_learning.graphs.adapter.run import load_config
        from harness_learning.graphs.serving.embed import load_harness

        tools = open_tools(load_config(self.run_dir), self.live)
        if tools is not None:
            options.setdefault("tools", tools)
        return load_harness(self.run_dir, version=self.best_sha, **options)


def adapt(config: AdaptConfig | None = None, /, *, harness: str | None = None,
          trainset: Sequence[dict[str, Any]] | None = None, task: str | None = None,
          metric: str | Callable[..., float] | None = None, tools: Sequence[Any] = (),
          solver: str = "local", proposer: str = "local", rounds: int | None = None,
          run_dir: str | Path | None = None, **fields: Any) -> AdaptResult:
    """Adapt `harness` (a seed name, a .py file or source text; the task's seed if None) on
    `trainset` (a list of examples with `question` and `answer`) or `task` (anything
    `--task` takes), scored by `metric`, with your `tools`; any other `AdaptConfig` field may
    be passed too. Blocks until the run stops; returns an `AdaptResult`."""
    from harness_learning.graphs.adapter.run import prepare, run_adaptation
    from harness_learning.harnesses.experience import give_location
    from harness_learning.harnesses.store.pgurl import give

    live: dict[str, Any] = {}
    if config is None:
        if run_dir is None:
            raise TypeError("adapt() needs run_dir= (where the run's log and versions go)")
        if (trainset is None) == (task is None):
            raise TypeError("adapt() needs exactly one of trainset=[...] or task=...")
        if trainset is not None:
            task = str(write_trainset(trainset, Path(run_dir)))
        config = AdaptConfig(task=str(task), run_dir=str(run_dir), solver=solver,
                             proposer=proposer, rounds=rounds, seed_harness=harness,
                             metric=_ref(metric, "metric", live), **fields)
        config.tools = [_ref(t, "tool", live) or "" for t in tools]
    give(config.store)  # the caller's own word: its PostgreSQL server may be connected to
    give_location(config.experience)  # likewise a postgresql:// experience library
    run = prepare(config, live=live)
    final = asyncio.run(run_adaptation(run.config, context=run.context()))
    return result_of(run.config.path, final, live)


def write_trainset(rows: Sequence[dict[str, Any]], run_dir: Path) -> Path:
    """The examples as JSONL in the run directory (checked like any data file when read)."""
    folder = run_dir / INPUTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TRAINSET_FILE
    text = "".join(json.dumps(row, sort_keys=True, default=str) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")
    return path


def _ref(obj: object, kind: str, live: dict[str, Any]) -> str | None:
    """A string as given; an object by its import reference, else recorded as live."""
    if obj is None or isinstance(obj, str):
        return obj
    ref = reference_of(obj)
    if ref is not None:
        return ref
    name = getattr(obj, "name", None) or getattr(obj, "__name__", None) or type(obj).__name__
    key = f"{LIVE_PREFIX}{kind}:{name}" if kind == "tool" else f"{LIVE_PREFIX}{name}"
    live[key] = obj
    return key


def result_of(run_dir: Path, final: dict[str, Any], live: dict[str, Any]) -> AdaptResult:
    from harness_learning.harnesses.rundir import RunDir

    with RunDir(run_dir).open_store() as store:
        lineage = [(s.round, s.sha, s.selection_score) for s in store.lineage()]
    if not lineage:
        raise RuntimeError(f"{run_dir}: the run stopped before storing any version "
                           f"({final.get('stop_reason')})")
    best = max(lineage, key=lambda s: (s[2] if s[2] is not None else -1.0, s[0]))
    return AdaptResult(run_dir, best[1], best[0], best[2], lineage[0][2], lineage,
                       final.get("stop_reason"), live)
