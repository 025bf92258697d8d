"""A run directory someone hands you may carry code in inputs/ (its metric here, written to
leave a marker file when imported). `resume`, `eval`, `approve` and `experience add` never import it in this process on
the run directory's word: unless this user's key sealed it (`adapt` does, for its own runs),
each refuses in one line naming the file and the marker is never written. `--trust-inputs`
imports it (so the crafted file is live) and seals it as the user's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_run import cli, error_line

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.run import prepare
from harness_learning.graphs.adapter.sealed_inputs import (
    KEY_ENV,
    UntrustedInputs,
    check_sealed,
    seal,
)
from harness_learning.harnesses.rundir import RunDir

HONEST = "def grade(prediction, gold, example):\n    return float(prediction == gold)\n"
CRAFTED = """from pathlib import Path
Path({marker!r}).write_text("imported")

def grade(prediction, gold, example):
    return 1.0
"""


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Two users' sealing keys; this process is the first user."""
    mine, theirs = str(tmp_path / "mine.key"), str(tmp_path / "theirs.key")
    monkeypatch.setenv(KEY_ENV, mine)
    return {"mine": mine, "theirs": theirs}


def handed_run(tmp_path: Path, keys: dict[str, str], marker: Path) -> RunDir:
    """A run of a data file's task prepared with an honest metric file, whose kept copy was then replaced by one
    that writes `marker` on import and sealed with someone else's key."""
    metric = tmp_path / "metric.py"
    metric.write_text(HONEST)
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(f'{{"question": "What is {i} + 1?", "answer": "{i + 1}"}}\n'
                            for i in range(8)))
    run_dir = tmp_path / "run"
    prepare(AdaptConfig(task=str(data), run_dir=str(run_dir), rounds=1,
                        metric=f"{metric}:grade"))
    run = RunDir(run_dir)
    check_sealed(run.inputs)  # sealed as this user's by `adapt`'s prepare
    (run.inputs / "metric.py").write_text(CRAFTED.format(marker=str(marker)))
    with pytest.raises(UntrustedInputs):
        check_sealed(run.inputs)  # changed since it was sealed
    os.environ[KEY_ENV] = keys["theirs"]
    try:
        seal(run.inputs)  # the person who hands it over sealed it as theirs
    finally:
        os.environ[KEY_ENV] = keys["mine"]
    return run


def test_resume_and_eval_refuse_a_handed_runs_code_in_one_line(tmp_path, keys):
    marker = tmp_path / "imported"
    run = handed_run(tmp_path, keys, marker)
    env = {**os.environ, KEY_ENV: keys["mine"]}
    library = str(tmp_path / "library")
    for args in (["resume", run.path], ["eval", run.path], ["approve", run.path],
                 ["experience", "add", run.path, "--to", library]):
        result = cli(*args, env=env, timeout=300)
        line = error_line(result)
        assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
        assert line.startswith(f"harness-learn: error: {run.inputs / 'metric.py'}: this run "
                               "directory's code"), line
        assert "--trust-inputs" in line and "Traceback" not in result.stderr
        assert not marker.exists(), f"{args[0]} imported the run's metric.py"


def test_trust_inputs_imports_it_and_seals_it_as_the_users(tmp_path, keys):
    marker = tmp_path / "imported"
    run = handed_run(tmp_path, keys, marker)
    cli("eval", run.path, "--trust-inputs", env={**os.environ, KEY_ENV: keys["mine"]},
        timeout=300)
    assert marker.read_text() == "imported", "the crafted file is live when trusted"
    check_sealed(run.inputs)  # sealed as this user's now: the next resume goes through
