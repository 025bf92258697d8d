"""`bench sample-diversity` sends a run's logged Proposer prompts again and counts different
completions by temperature (the question before an RL phase: can a GRPO group differ at
all?). Control flow with a scripted model on a committed run's log; the real SmolLM2 server
is greedy at temperature 0 (one distinct completion); bad input is one line and exit 2."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from scripted_sums import ScriptedModel

from harness_learning.cli.main import main
from harness_learning_lab.bench import sample_diversity

LOGGED_RUN = Path(__file__).parents[2] / "data" / "racing_run_v3"


def _run_copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(LOGGED_RUN, run)
    return run


def test_distinct_completions_are_counted_per_prompt_and_temperature(tmp_path) -> None:
    proposals = sample_diversity.logged_prompts(_run_copy(tmp_path), limit=5)
    assert [p.id for p in proposals] == ["r1-c0"]  # the run's 3 samples share one prompt
    logged = proposals[0].completion

    def rule(prompt: str, params: dict) -> str:
        # cold: the logged completion every time; hot: a different one per seed
        return logged if params["temperature"] < 1 else f"edit {params['seed']}"

    rows = asyncio.run(sample_diversity.measure(ScriptedModel(rule), proposals, [0.5, 1.5],
                                                samples=3, max_tokens=16))
    assert [(r.temperature, r.distinct, r.same_as_logged) for r in rows] == [
        (0.5, 1, 3), (1.5, 3, 0)]
    table = sample_diversity.table(rows, "scripted")
    assert "| r1-c0 | 0.5 | 3 | 1 | 3 |" in table and "| r1-c0 | 1.5 | 3 | 3 | 0 |" in table


def test_the_real_server_at_temperature_zero_writes_one_completion(local_model_url,
                                                                   tmp_path) -> None:
    rows = sample_diversity.run(_run_copy(tmp_path), f"openai/smollm2@{local_model_url}",
                                [0.0], samples=2, prompts=1, max_tokens=6)
    assert len(rows) == 1 and rows[0].samples == 2 and rows[0].distinct == 1
    assert 0 < rows[0].completion_tokens <= 6


@pytest.mark.parametrize(("make_run", "flags", "says"), [
    (lambda tmp: tmp, [], "holds no run log"),
    (_run_copy, ["--temperatures", "hot"], "--temperatures 'hot'"),
    (_run_copy, ["--samples", "0"], "--samples 0"),
], ids=["no-log", "bad-temperature", "no-samples"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, make_run, flags, says) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "sample-diversity", str(make_run(tmp_path)), *flags])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    assert says in lines[0] and " · hint: " in lines[0], lines[0]
