"""`harness-learn show`, `report` (rendered in a real headless Chromium) and `rollback`, on a real
adaptation run against the simulated endpoint; and once on a run with the real local model."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_run import cli
from sim_adapt import ROLLBACK_REASON

from harness_learning.graphs.serving.embed import resolve_harness
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.report import load_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars"]


def adopted(run, round_: int):
    return next(c for c in run.rounds[round_ - 1].candidates if c.outcome == "adopted")


def test_show_prints_lineage_outcomes_and_spend(sim_run: Path) -> None:
    result = cli("show", sim_run)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    run = load_run(sim_run)
    first, second = adopted(run, 1), adopted(run, 2)
    assert f"{first.id} adopted {first.sha[:12]} · selection 1.000" in text
    assert f"{second.id} adopted {second.sha[:12]} · selection 0.000" in text
    assert "invalid" in text and "no_edit_found" in text and "syntax" in text
    assert f"round 3: rollback to {first.sha[:12]}" in text and ROLLBACK_REASON in text
    assert re.search(r"│\s+all\s+│\s+\d+", text), "the spend table has a total row"


def test_show_candidate_prints_diff_report_and_results(sim_run: Path) -> None:
    run = load_run(sim_run)
    first = adopted(run, 1)
    result = cli("show", sim_run, "--candidate", first.id)
    assert result.returncode == 0, result.stderr
    assert '+PROMPT = """MARK-A Solve the problem.' in result.stdout
    assert "report the Proposer saw" in result.stdout
    assert "## Report on feedback problems" in result.stdout
    for ev in first.results:
        assert ev.problem_id in result.stdout
    assert len(first.results) == 3 and all(ev.result.score == 1.0 for ev in first.results)


def test_every_candidate_diff_is_logged_invalid_ones_too(sim_run: Path) -> None:
    with SQLiteLogStore(sim_run) as store:
        diffs = {e.payload["proposal_id"]: e.payload["diff"]
                 for e in store.iter_events(kinds=["candidate_diff"])}
        proposals = list(store.iter_proposals())
    assert sorted(diffs) == sorted(p.id for p in proposals) and len(proposals) == 4
    broken = next(p for p in proposals if p.round == 2 and not p.valid)
    assert broken.candidate_sha is None, "an invalid candidate is no stored version"
    assert "+class State(TypedDict, total=False:" in diffs[broken.id]
    assert "syntax" in (broken.invalid_reason or "")


def test_rollback_makes_round_1_current_as_a_decision(sim_run: Path) -> None:
    run = load_run(sim_run)
    first, second = adopted(run, 1), adopted(run, 2)
    assert [s.sha for s in run.lineage] == [run.lineage[0].sha, first.sha, second.sha, first.sha]
    rollback = run.rounds[-1]
    assert rollback.kind == "rollback" and rollback.decision.current_sha == second.sha
    assert ROLLBACK_REASON in rollback.decision.reason
    assert resolve_harness(sim_run).source == load_source(sim_run, first.sha)
    again = cli("rollback", sim_run, "1")
    assert again.returncode == 2 and "already the current version" in again.stderr


def load_source(run_dir: Path, sha: str) -> str:
    with SQLiteLogStore(run_dir) as store:
        return store.get_version_source(sha)


def render(html: Path, out: Path) -> tuple[Path, str]:
    """A screenshot and the rendered DOM of `html`, from a fresh Chromium profile."""
    shot = out / "report.png"
    base = [CHROMIUM, *CHROMIUM_FLAGS, "--window-size=1280,1600"]
    url = html.resolve().as_uri()
    subprocess.run([*base, f"--user-data-dir={out / 'profile-shot'}", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=True)
    dom = subprocess.run([*base, f"--user-data-dir={out / 'profile-dom'}", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return shot, dom


def assert_not_blank(png: Path) -> None:
    from PIL import Image

    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 1600)
    background = image.getpixel((2, 2))
    pixels = list(image.getdata())
    inked = sum(1 for p in pixels if p != background) / len(pixels)
    assert inked > 0.05, f"only {inked:.1%} of the screenshot differs from the background"
    assert len(set(pixels)) > 50, "too few colours: text and figures did not render"


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (make test-tools installs "
                    "Debian's package where apt-get runs as root)")
def test_report_renders_in_headless_chromium(sim_run: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "report.html"
    result = cli("report", sim_run, "--out", out_file)
    assert result.returncode == 0, result.stderr
    html = out_file.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "loads from a network"
    assert "<script" not in html and "<link" not in html
    shot, dom = render(out_file, tmp_path)
    assert_not_blank(shot)
    run = load_run(sim_run)
    assert dom.count("<svg") == 3, "lineage, scores and spend figures"
    for section in ("lineage", "scores", "rounds", "spend", "config", "test-scores"):
        assert f'id="{section}"' in dom
    for c in (c for r in run.rounds for c in r.candidates):
        assert f'id="{c.id}"' in dom and f'href="#{c.id}"' in dom
    assert f"Lineage of {run.task}" in dom and "Scores per round on rg:basic_arithmetic" in dom
    assert "solver openai/sim · proposer openai/sim · run run" in dom
    assert "round (0 = seed)" in dom and "mean score" in dom and "3 (rollback)" in dom
    assert '+PROMPT = """MARK-A' in dom.replace("&quot;", '"')
    assert "class State(TypedDict, total=False:" in dom and "no_edit_found" in dom
    assert ROLLBACK_REASON in dom and "## Report on feedback problems" in dom


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_show_and_report_of_a_local_model_run(local_model_url, tmp_path: Path) -> None:
    run_dir = tmp_path / "local"
    result = cli("adapt", "--task", "rg:basic_arithmetic", "--run-dir", run_dir, "--solver",
                 "local", "--proposer", "local:smollm2-135m", "--rounds", "1", "--candidates", "1",
                 "--feedback", "2", "--selection", "2", "--dev", "4", "--test", "1",
                 "--proposer-max-tokens", "300", "--concurrency", "2")
    assert result.returncode == 0, result.stderr[-2000:]
    run = load_run(run_dir)
    (candidate,) = run.rounds[0].candidates
    shown = cli("show", run_dir)
    assert shown.returncode == 0 and f"{candidate.id} {candidate.outcome}" in shown.stdout
    detail = cli("show", run_dir, "--candidate", candidate.id)
    assert detail.returncode == 0 and "report the Proposer saw" in detail.stdout
    out_file = tmp_path / "local.html"
    assert cli("report", run_dir, "--out", out_file).returncode == 0
    html = out_file.read_text(encoding="utf-8")
    assert f'id="{candidate.id}"' in html and "solver local · proposer local:smollm2-135m" in html
    if CHROMIUM is not None:
        shot, dom = render(out_file, tmp_path)
        assert_not_blank(shot)
        assert f'id="{candidate.id}"' in dom
