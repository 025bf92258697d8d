"""`bench experience` resumes an unfinished run from its checkpoint, and starts one again only
when the bench's settings changed under it (real SmolLM2 in both roles, the smoke settings)."""

from __future__ import annotations

import json

import pytest

from harness_learning_lab.bench import experience as bench


@pytest.mark.slow
def test_an_unfinished_run_resumes_and_a_changed_one_starts_again(tmp_path, local_model_url):
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.harnesses.rundir import RunDir

    settings = bench.load_settings(smoke=True)
    out = tmp_path / "out"
    out.mkdir()
    run = bench.Run("proposer", "rg:lcm", 0, "", "none")
    run_dir = bench.run_path(out, run)
    options = bench.task_options(settings, out, run.task)
    # a run started under other settings (one selection problem more) that never ran
    other = {**settings, "selection": settings["selection"] + 1}
    prepare(bench.adapt_config(run, run_dir, other, options))
    said: list[str] = []
    tests = bench.test_scores(out, settings)
    first = bench.run_one(run, out, settings, tests, said.append)
    assert said[0].startswith("resume proposer/rg:lcm/seed0")  # a config.json was there
    assert said[1].startswith("  starting it again:") and "another config" in said[1]
    stored = json.loads((run_dir / "config.json").read_text())
    assert stored["selection"] == settings["selection"]

    def evaluations() -> list[tuple]:
        with RunDir(run_dir).open_store(read_only=True) as store:
            return [(e.sha, e.purpose, e.round) for e in store.iter_evaluations()]

    judged = evaluations()
    assert judged and first["solver_calls"] > 0
    # killed after its last round but before its result was kept: it resumes, redoing nothing
    (run_dir / "result.json").unlink()
    said.clear()
    again = bench.run_one(run, out, settings, tests, said.append)
    assert said[0].startswith("resume proposer/rg:lcm/seed0")
    assert not any("starting it again" in line for line in said)
    assert evaluations() == judged
    keep = ("solver_calls", "calls_to_final", "final_sha", "held_out", "candidates")
    assert {k: again[k] for k in keep} == {k: first[k] for k in keep}
