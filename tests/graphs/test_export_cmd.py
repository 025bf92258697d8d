"""`harness-learn export`: a run's version as a plain harness file that loads and runs on its
own. On a real adaptation run against the simulated endpoint (tests/graphs/conftest.py's
`sim_run`: round 1 adopts MARK-A, round 2 the worse MARK-B, then a rollback to round 1's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import cli

from harness_learning.cli.main import main
from harness_learning.graphs.serving.embed import load_harness
from harness_learning.graphs.serving.harness_source import resolve_harness
from harness_learning.harnesses.store import SQLiteLogStore


def export(capsys, *args) -> tuple[int, list[str]]:
    """Run `harness-learn export ...` through the real entry point: (exit code, stderr lines)."""
    with pytest.raises(SystemExit) as exited:
        main(["export", *map(str, args)])
    return exited.value.code, capsys.readouterr().err.strip().splitlines()


def test_the_best_version_exports_as_a_harness_that_loads_and_runs(sim_run, sim_url, tmp_path,
                                                                   capsys) -> None:
    best = resolve_harness(sim_run, "best")
    out = tmp_path / "best.py"
    code, _ = export(capsys, sim_run, "--version", "best", "--out", out)
    assert code == 0
    text = out.read_text()
    assert text.startswith(f"# Exported by `harness-learn export` from run {sim_run}, "
                           f"version {best.sha} (best)\n")
    assert "# task rg:basic_arithmetic" in text and "selection 1.000" in text
    assert "proposed in round 1, in force after rounds 1, 3" in text  # adopted, rolled back to
    assert text.endswith(best.source) and 'PROMPT = """MARK-A ' in text
    assert resolve_harness(out).source == text  # a plain harness file now

    model = f"openai/sim@{sim_url}"
    harness = load_harness(out, model=model)
    assert harness.invoke({"question": "Calculate 2 + 3 * 4."})["answer"] == "14"
    result = cli("run", "--task", "rg:basic_arithmetic", "--harness", out, "--model", model,
                 "--n", "3", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["mean_score"] == 1.0 and summary["invalid"] == 0


def test_a_sha_prefix_exports_that_version_and_its_own_round(sim_run, tmp_path, capsys) -> None:
    with SQLiteLogStore(sim_run) as store:
        worse = next(v for v in store.iter_versions() if 'PROMPT = """MARK-B ' in v.source)
    out = tmp_path / "worse.py"
    code, _ = export(capsys, sim_run, "--version", worse.sha[:10], "--out", out)
    assert code == 0
    text = out.read_text()
    assert f"version {worse.sha} ({worse.sha[:10]})" in text
    assert "proposed in round 2, in force after round 2" in text and "selection 0.000" in text
    assert text.endswith(worse.source)


def test_export_refuses_to_overwrite_unless_forced(sim_run, tmp_path, capsys) -> None:
    out = tmp_path / "kept.py"
    out.write_text("# mine\n")
    code, lines = export(capsys, sim_run, "--out", out)
    assert code == 2 and len(lines) == 1 and f"{out} exists" in lines[0] and "--force" in lines[0]
    assert out.read_text() == "# mine\n"
    code, _ = export(capsys, sim_run, "--out", out, "--force")
    assert code == 0 and out.read_text().endswith(resolve_harness(sim_run, "current").source)


@pytest.mark.parametrize(("run", "version", "says"), [
    ("sim", "deadbeef", "version 'deadbeef' matches 0 stored versions"),
    ("missing", "current", "is not a run directory"),
])
def test_an_unknown_version_or_a_missing_run_is_one_line(run, version, says, sim_run: Path,
                                                         tmp_path, capsys) -> None:
    where = sim_run if run == "sim" else tmp_path / "nowhere"
    out = tmp_path / "x.py"
    code, lines = export(capsys, where, "--version", version, "--out", out)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("harness-learn: error: ") and says in lines[0], lines[0]
    assert not out.exists()
