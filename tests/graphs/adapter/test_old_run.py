"""A run made before the log's schema changed still resumes: tests/data/racing_run_v3 was
written by log schema 3 (a proposal's verdict in ten columns of its own, written as a draft and
then updated) and stopped before round 1's race, two valid candidates drafted and not judged.
Resumed by this code (real sandbox workers, the scripted models and task that made it), its
log is carried forward to this schema, the race settles the old drafts, round 2 runs, and
every proposal reads back with the judge's `Outcome`."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from scripted_sums import QUESTION, SumTask

from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import load_config, run_adaptation
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import SCHEMA_VERSION

OLD_RUN = Path(__file__).resolve().parents[2] / "data" / "racing_run_v3"
LINE1 = ('PROMPT = """Solve the problem. Think briefly, then give the final answer on the last '
         'line')
LINE2 = 'in the form "Answer: <answer>".'
EDITS = [f"<<<<<<< SEARCH\n{s}\n=======\n{r}\n>>>>>>> REPLACE\n" for s, r in (
    (LINE1, LINE1.replace('"""', '"""ODD-FIX ')), (LINE2, LINE2 + " EVEN-FIX"))]
EDITS.append("I have no edit to suggest.")
"""What the Proposer answered when the run was made, by sample index (its README)."""


def solver_rule(prompt: str, params: dict) -> str:
    """Right on odd first terms only with ODD-FIX in the prompt, on even ones with EVEN-FIX."""
    a, b = map(int, QUESTION.search(prompt).groups())
    fixed = "ODD-FIX" in prompt if a % 2 else "EVEN-FIX" in prompt
    return f"Answer: {a + b if fixed else a + b + 1}"


def test_a_run_made_with_log_schema_3_resumes_and_reads_its_proposals(tmp_path, scripted):
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUN, run_dir, ignore=shutil.ignore_patterns("README.md"))
    config = load_config(run_dir)
    ctx = AdapterContext.from_config(
        config, task=SumTask(6), solver=scripted(solver_rule),
        proposer=scripted(lambda _prompt, params: EDITS[params["seed"] % 1009 % 3]))
    final = asyncio.run(run_adaptation(config, resume=True, context=ctx))

    assert final["stop_reason"] == "finished 2 rounds", final.get("stop_reason")
    first = {c["index"]: c for c in final["rounds"][0]["candidates"]}
    assert first[0]["valid"] and first[1]["valid"] and not first[2]["valid"]
    assert first[0]["selection_score"] == first[1]["selection_score"] == 0.5
    with RunDir(run_dir).open_store() as store:
        assert store.get_run().schema_version == SCHEMA_VERSION
        got = {p.id: p for p in store.iter_proposals()}
    # written by the old code, judged invalid then: its verdict carried into its outcome
    assert got["r1-c2"].outcome.invalid_kind == "no_edit_found" and got["r1-c2"].reward == 0.0
    assert got["r1-c2"].completion == EDITS[2]
    # drafted by the old code, settled by the new one's race with the notes it adds
    for index in (0, 1):
        settled = got[f"r1-c{index}"]
        assert settled.completion == EDITS[index] and settled.candidate_sha == first[index]["sha"]
        assert settled.outcome.valid and settled.outcome.selection_score == 0.5
        assert settled.outcome.view()["reward"] == first[index]["reward"] > 0
        assert settled.reward_parts["evaluated"] == first[index]["evaluated"]
        assert settled.parent_score == final["rounds"][0]["current_selection_score"] == 0.0
    # round 2, all new: each proposal put once and settled once, the state's view its outcome's
    second = final["rounds"][1]["candidates"]
    assert len(second) == 3 and all(got[c["proposal_id"]].settled for c in second)
    for view in second:
        outcome = got[view["proposal_id"]].outcome
        assert {k: view[k] for k in outcome.view()} == outcome.view()
        assert got[view["proposal_id"]].parent_score == final["rounds"][1][
            "current_selection_score"]
