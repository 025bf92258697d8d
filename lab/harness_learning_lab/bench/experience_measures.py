"""What `bench experience` reads off one finished adaptation run's log.

- `solver_calls`: every Solver call the search made (the log's evaluations; the bench's own
  held-out scoring is not in the log and not counted).
- `calls_to_final`: the Solver calls of every evaluation up to and including the round that
  first made the run's final version (0 when the final version is the seed): what the arm
  spent before it had what it hands back. Other candidates of that round are counted too.
- `wasted`: judged candidates whose selection score is below their parent's on the same
  problems.
- `structural`: the final version differs from the seed in a flag of the lab's structure
  detectors (`experiments.structure`: code_loop, extra_hop, raw_passages, research_on_absent);
  a node that changes nothing the detectors read (a no-op) does not count.
- `library_adopted` / `library_as_operator`: adopted versions that came from the experience
  library (origin `experience:ID`), and of them those equal, after normalisation
  (`edits.normalise`), to a registered operator's output on their parent: a gain from those is
  that block's, not the library's learning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_learning.harnesses.edits.normalise import normalised_source
from harness_learning.harnesses.edits.operators import (
    OPERATORS,
    OperatorError,
    apply_operator,
    misfit,
)
from harness_learning.harnesses.store.spend import is_solver_call
from harness_learning_lab.experiments.structure import analyze

EXPERIENCE = "experience:"


def structural(seed: str, final: str) -> bool:
    """Whether a structure detector's flag differs between the seed and `final`."""
    before, after = analyze(seed), analyze(final)
    if before is None or after is None:
        return False
    return before.flags(before.search_hops) != after.flags(before.search_hops)


def operator_output(parent: str, child: str) -> str | None:
    """The registered operator whose output on `parent` equals `child` after normalisation
    (operators that need demonstrations are not tried), else None."""
    want = normalised_source(child)
    for name, op in OPERATORS.items():
        try:
            if misfit(op, parent) is None and normalised_source(apply_operator(op, parent)) == want:
                return name
        except OperatorError:
            continue
    return None


def measures(run_dir: Path) -> dict[str, Any]:
    """The run's figures (see the module docstring) and its seed's and final version's
    sources."""
    from harness_learning.harnesses.rundir import RunDir

    with RunDir(run_dir).open_store(read_only=True) as store:
        lineage = store.lineage()
        seed_sha, final_sha = lineage[0].sha, lineage[-1].sha
        seed, final = store.get_version_source(seed_sha), store.get_version_source(final_sha)
        reached = 0 if final_sha == seed_sha else store.get_version(final_sha).round
        calls, to_final = 0, 0
        for ev in store.iter_evaluations():
            if ev.purpose == "test":
                continue
            n = sum(1 for c in ev.result.calls or () if is_solver_call(c))
            calls += n
            to_final += n if final_sha != seed_sha and ev.round <= reached else 0
        proposals = list(store.iter_proposals())
        judged = [p for p in proposals if p.selection_score is not None]
        wasted = sum(1 for p in judged
                     if p.parent_score is not None and p.selection_score < p.parent_score)
        chain = list(dict.fromkeys(s.sha for s in lineage[1:] if s.sha != seed_sha))
        adopted = set(chain)
        from_library = [p for p in proposals
                        if p.candidate_sha in adopted and p.origin.startswith(EXPERIENCE)]
        as_operator = [p.origin for p in from_library if p.parent_sha and operator_output(
            store.get_version_source(p.parent_sha), store.get_version_source(p.candidate_sha))]
        origins = {p.candidate_sha: p.origin for p in proposals if p.candidate_sha in adopted}
    return {"seed_source": seed, "final_source": final, "final_sha": final_sha,
            "adopted_origins": [origins.get(sha, "?") for sha in chain],
            "solver_calls": calls, "calls_to_final": to_final, "candidates": len(judged),
            "wasted": wasted, "structural": structural(seed, final),
            "library_adopted": len(from_library), "library_as_operator": len(as_operator)}
