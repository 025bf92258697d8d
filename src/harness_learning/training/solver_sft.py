"""`train solver-sft`, Co-Harness's idea: fine-tune the Solver on its own successful
trajectories under an evolved harness, so that harness and Solver improve as a pair.

A run's log keeps, for every problem it evaluated, each Solver call that crossed the bridge:
the messages the harness sent and the reply. The calls of the feedback and selection problems
a chosen version solved become conversational prompt-completion examples (test problems are
never read: the loop never sees them, and neither does this). The Solver is fine-tuned on
them as the Proposer is by `train sft`; `train export` makes a GGUF of it, and
`harness-learn eval RUN --solver local:THAT.gguf` tests the pair on the held-out problems.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.training.config import SolverSFTConfig
from harness_learning.training.data import LogError, open_log
from harness_learning.training.grpo_offline import TrainResult

if TYPE_CHECKING:
    from harness_learning.harnesses.results import ProblemResult
    from harness_learning.harnesses.store import LogStore

LEARNED_PURPOSES = ("feedback", "selection")
"""The evaluations trajectories come from: the dev problems the loop itself ran."""


@dataclass
class TrajectoryReport:
    """What the trajectory set read and kept (printed by the CLI as `data:`)."""

    runs: int = 0
    versions: int = 0
    problems_read: int = 0
    problems_solved: int = 0
    calls_kept: int = 0
    duplicates_folded: int = 0
    notes: list[str] = field(default_factory=list)


def chosen_versions(store: LogStore, which: str) -> list[str]:
    """The shas whose trajectories are learned (see `SolverSFTConfig.version`)."""
    lineage = [step.sha for step in store.lineage()]
    if which == "final":
        return lineage[-1:]
    if which == "lineage":
        return list(dict.fromkeys(lineage))
    evaluated = list(dict.fromkeys(ev.sha for ev in store.iter_evaluations()))
    if which == "all":
        return evaluated
    matches = [sha for sha in evaluated if sha.startswith(which)]
    if len(matches) != 1:
        raise LogError(f"version {which!r} matches {len(matches)} evaluated versions of this "
                       "run; give final, lineage, all, or a longer sha (`harness-learn show`)")
    return matches


def solver_calls(result: ProblemResult) -> Iterable[tuple[list[dict], str]]:
    """The successful Solver calls of one problem's trace: (messages, reply)."""
    for call in result.calls:
        messages = call.args.get("messages") if isinstance(call.args, dict) else None
        if call.tool == "llm" and not call.error and isinstance(call.result, str) \
                and call.result.strip() and isinstance(messages, list) and messages:
            yield messages, call.result


def trajectory_rows(run_dirs: Sequence[str | Path], version: str, min_score: float,
                    report: TrajectoryReport) -> list[dict[str, Any]]:
    """One conversational prompt-completion row per distinct successful Solver call."""
    rows: dict[str, dict[str, Any]] = {}
    for run_dir in map(Path, run_dirs):
        with open_log(run_dir) as store:
            shas = set(chosen_versions(store, version))
            read = solved = 0
            for ev in store.iter_evaluations():
                if ev.sha not in shas or ev.purpose not in LEARNED_PURPOSES:
                    continue
                read += 1
                if ev.result.error_kind or ev.result.score is None \
                        or ev.result.score < min_score:
                    continue
                solved += 1
                for messages, reply in solver_calls(ev.result):
                    key = json.dumps([messages, reply], sort_keys=True)
                    report.duplicates_folded += key in rows
                    rows[key] = {"prompt": messages,
                                 "completion": [{"role": "assistant", "content": reply}]}
        report.runs += 1
        report.versions += len(shas)
        report.problems_read += read
        report.problems_solved += solved
        report.notes.append(f"{run_dir}: {len(shas)} version(s) ({version}), {read} dev "
                            f"evaluations, {solved} scored >= {min_score:g}")
    report.calls_kept = len(rows)
    if not rows:
        raise LogError("no successful Solver call to learn: the chosen versions solved no "
                       f"feedback or selection problem at score >= {min_score:g}")
    return list(rows.values())


def train_solver_sft(run_dirs: Sequence[str | Path], config: SolverSFTConfig,
                     progress: bool = True) -> TrainResult:
    """Fine-tune the Solver on the successful trajectories of `run_dirs`; writes metrics, a
    PNG and a checkpoint (`train export` makes it a GGUF the local server loads)."""
    from datasets import Dataset

    from harness_learning.training.sft import fit_sft

    report = TrajectoryReport()
    rows = trajectory_rows(run_dirs, config.version, config.min_score, report)
    return fit_sft(Dataset.from_list(rows), config, [Path(p) for p in run_dirs], report,
                   "Solver SFT", progress)
