"""Log a round of fully evaluated candidates with a real Solver, so that racing can be replayed
on real outcomes (`harness-learn bench racing --from-log`).

The racing bench simulates candidates; its one free parameter, how alike candidates' outcomes
are on a problem (`rho`), decides how well racing does. Real rounds of the adapter answer that,
but a round evaluates only the valid candidates its Proposer wrote, and the CPU default's
Proposer (SmolLM2-135M) writes none. So this takes the candidates' edits from files, written as
a Proposer would write them (SEARCH/REPLACE blocks or whole programs), applies them to a seed
with the adapter's own edit code, and evaluates the seed and every candidate on the same
selection problems. Results go to an ordinary run log as purpose "selection", round 1: the rows
a full-evaluation round of the adapter leaves. A rerun reuses every result already logged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness_learning.evals.evaluator import evaluate
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import UNSCORED, ProblemResult
from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.result_writer import ResultWriter
from harness_learning.harnesses.edits import parse_and_apply
from harness_learning.harnesses.store.sqlite import SQLiteLogStore

ROUND = 1


@dataclass(frozen=True)
class Candidate:
    name: str
    source: str


def load_edits(folder: Path) -> dict[str, str]:
    """The folder's `*.txt` edits by file stem, in name order."""
    files = sorted(Path(folder).glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no *.txt edits in {folder}")
    return {f.stem: f.read_text() for f in files}


def build_candidates(seed_source: str, edits: dict[str, str],
                     fmt: str = "search_replace") -> list[Candidate]:
    """The seed (named "seed") and one candidate per edit. An edit that does not apply is an
    error naming it: a hand-written round should contain exactly the candidates asked for."""
    out = [Candidate("seed", seed_source)]
    for name, completion in edits.items():
        edit = parse_and_apply(seed_source, completion, fmt)
        if edit.failure is not None or edit.new_source is None:
            raise ValueError(f"edit {name!r} does not apply to the seed: {edit.failure}")
        if edit.unchanged:
            raise ValueError(f"edit {name!r} leaves the seed unchanged")
        out.append(Candidate(name, edit.new_source))
    return out


async def log_round(store: SQLiteLogStore, task: Task, candidates: Sequence[Candidate],
                    problems: Sequence[Problem], toolbox, concurrency: int = 4,
                    on_result: Callable[[ProblemResult], None] | None = None) -> dict[str, float]:
    """Evaluate every candidate on `problems` (the first is the seed, as `build_candidates`
    returns them), logging results as they come (in batches, off the event loop); return each
    one's mean score. Infrastructure errors are not logged (they would be scored as wrong); if
    any remain, raise after logging the rest, and a rerun retries only those."""
    seed_sha = store.put_version(candidates[0].source, None, 0, "seed")
    ids = [p.id for p in problems]
    means, unscored = {}, 0
    for cand in candidates:
        sha = seed_sha if cand is candidates[0] else store.put_version(cand.source, seed_sha,
                                                                       ROUND, cand.name)
        writer = ResultWriter(store, sha, "selection", ROUND)

        def keep(result: ProblemResult, writer: ResultWriter = writer) -> None:
            nonlocal unscored
            if result.error_kind in UNSCORED:
                unscored += 1
            else:
                writer.add(result)
            if on_result is not None:
                on_result(result)

        todo = [p for p in problems if p.id not in store.get_results(sha, ids, "selection")]
        try:
            if todo:
                await evaluate(cand.source, todo, task, toolbox, concurrency=concurrency,
                               on_result=keep)
        finally:
            await writer.flush()  # what finished is kept, even if the evaluation failed
        done = store.get_results(sha, ids, "selection")
        means[cand.name] = sum(done[i].score or 0.0 for i in done) / max(len(done), 1)
    if unscored:
        raise RuntimeError(f"{unscored} evaluation(s) failed for infrastructure reasons and were "
                           "not logged; rerun the same command to retry only those")
    return means
