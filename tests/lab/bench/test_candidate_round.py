"""A logged round of hand-written candidates: the edits, and a real round with the local model."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_learning.evals.registry import get_task
from harness_learning.harnesses.llm import get_client
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store.sqlite import SQLiteLogStore
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning_lab.bench.candidate_round import (
    build_candidates,
    load_edits,
    log_round,
)
from harness_learning_lab.bench.racing_logged import logged_rounds

EDITS = Path(__file__).parents[3] / "experiments" / "candidates" / "reasoning_direct"


def test_every_shipped_edit_applies_to_the_reasoning_seed_and_changes_it():
    seed = seed_source("reasoning_direct")
    candidates = build_candidates(seed, load_edits(EDITS))
    assert candidates[0].name == "seed" and len(candidates) == 1 + len(list(EDITS.glob("*.txt")))
    assert len({c.source for c in candidates}) == len(candidates)
    for c in candidates[1:]:
        compile(c.source, c.name, "exec")


def test_an_edit_that_does_not_apply_is_named(tmp_path):
    (tmp_path / "bad.txt").write_text("<<<<<<< SEARCH\nno such line\n=======\nx\n>>>>>>> REPLACE\n")
    with pytest.raises(ValueError, match="'bad' does not apply"):
        build_candidates(seed_source("reasoning_direct"), load_edits(tmp_path))


def test_an_edit_that_changes_nothing_is_named(tmp_path):
    line = 'from langgraph.graph import END, START, StateGraph'
    (tmp_path / "same.txt").write_text(f"<<<<<<< SEARCH\n{line}\n=======\n{line}\n>>>>>>> REPLACE\n")
    with pytest.raises(ValueError, match="'same' leaves the seed unchanged"):
        build_candidates(seed_source("reasoning_direct"), load_edits(tmp_path))


def test_an_empty_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no \\*.txt edits"):
        load_edits(tmp_path)


@pytest.mark.slow
def test_a_round_with_the_local_model_is_logged_and_reused(local_model_url, tmp_path):
    import asyncio

    task = get_task("rg:letter_counting", n_dev=3)
    seed = seed_source("reasoning_direct")
    edits = {k: v for k, v in load_edits(EDITS).items() if k.startswith(("03", "05"))}
    candidates = build_candidates(seed, edits)
    toolbox = Toolbox(solver=get_client("local"), solver_params={"max_tokens": 32})
    seen: list = []
    with SQLiteLogStore(tmp_path) as store:
        means = asyncio.run(log_round(store, task, candidates, task.dev(), toolbox,
                                      on_result=seen.append))
        assert len(seen) == 9 and set(means) == {"seed", "03_last_number", "05_zero_shot"}
        again = asyncio.run(log_round(store, task, candidates, task.dev(), toolbox,
                                      on_result=seen.append))
    assert len(seen) == 9 and again == means  # nothing re-run
    (round_,) = logged_rounds(tmp_path, min_problems=3)
    assert round_.names == ["seed", "03_last_number", "05_zero_shot"]
    assert round_.scores.shape == (3, 3)


class _DownSolver:
    """An endpoint that is down on every call (control flow only; the real model is above)."""

    async def acomplete(self, messages, **params):
        from harness_learning.harnesses.llm.errors import InfraError

        raise InfraError("server", "endpoint down")


def test_infrastructure_errors_are_not_logged_as_wrong_answers(tmp_path):
    import asyncio

    task = get_task("rg:letter_counting", n_dev=2)
    candidates = build_candidates(seed_source("reasoning_direct"), {})
    with SQLiteLogStore(tmp_path) as store:
        with pytest.raises(RuntimeError, match="2 evaluation\\(s\\) failed for infrastructure"):
            asyncio.run(log_round(store, task, candidates, task.dev(),
                                  Toolbox(solver=_DownSolver())))
        assert list(store.iter_evaluations(purpose="selection")) == []


def test_log_round_command_answers_a_parsing_twin_from_the_run_cache(local_model_url, tmp_path):
    """03_last_number only parses differently: its Solver calls are the seed's, made once."""
    import shutil

    from typer.testing import CliRunner

    from harness_learning.cli import app

    edits = tmp_path / "edits"
    edits.mkdir()
    shutil.copy(EDITS / "03_last_number.txt", edits)
    out = tmp_path / "round"
    result = CliRunner().invoke(app, ["bench", "log-round", "--out", str(out), "--edits",
                                      str(edits), "--selection", "2", "--max-tokens", "16"])
    assert result.exit_code == 0, result.output
    assert "Solver: 2 calls made, 2 answered from the run's cache" in result.output
    assert "evaluating: 4/4" in result.output  # not a terminal: progress as plain lines
    assert (out / "solver_cache.sqlite").exists()
    (round_,) = logged_rounds(out, min_problems=2)
    assert round_.names == ["seed", "03_last_number"]
