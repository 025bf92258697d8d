"""A finished run against the simulated endpoint (tests/support/sim_adapt.py), built once and
shared by the tests of what people see of a run: show, report, rollback and CLI errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sim_adapt
from cli_run import cli, free_port

from harness_learning.harnesses.llm import SimServer


@pytest.fixture(scope="session")
def sim_url() -> Iterator[str]:
    """One simulated endpoint on a fixed port, so a run's stored config still reaches it."""
    with SimServer(port=free_port(), latency_s=0.0, rules=sim_adapt.rules()) as url:
        yield url


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory, sim_url) -> Path:
    """Adapted (round 1 adopts MARK-A, round 2 the worse MARK-B, one invalid candidate each),
    judged on the test split, then rolled back to round 1's version."""
    run_dir = tmp_path_factory.mktemp("sim") / "run"
    for args in (sim_adapt.adapt_args(sim_url, str(run_dir)), ["eval", run_dir],
                 ["rollback", run_dir, "1", "--reason", sim_adapt.ROLLBACK_REASON]):
        result = cli(*args)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return run_dir
