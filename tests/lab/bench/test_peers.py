"""`bench peers`: the figures (intervals, anytime curves, the budget cut), the trace, the command
end to end on the simulated endpoint for control flow (every system's driver, the real GEPA
and OpenEvolve packages, our sandbox), resuming from the cache, bad input, and one real-model
path (GEPA with the local Qwen reflection model and SmolLM2 Solver)."""

from __future__ import annotations

import json
import re

import pytest
from sim_adapt import EDIT, arithmetic
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.harnesses.llm.simserver import SimServer
from harness_learning.harnesses.seeds import seed_source
from harness_learning_lab.bench import peers_report
from harness_learning_lab.bench.peers_meter import Trace, sha_of

pytest.importorskip("gepa")
pytest.importorskip("openevolve")

SEED = seed_source("reasoning_direct")
WHOLE = "```python\n" + SEED.replace('PROMPT = """', 'PROMPT = """MARK-A ') + "```"
SYSTEMS = ("best_valid", "racing", "gepa", "openevolve")


def run_of(system: str, seed: int, final: float, calls: int, task: str = "t") -> dict:
    curve = [{"solver_calls": 0, "test": 0.25}, {"solver_calls": calls, "test": final}]
    return {"system": system, "task": task, "seed": seed, "curve": curve, "final_test": final,
            "solver_calls": calls, "proposer_calls": 2, "proposer_tokens": 100, "wall_s": 1.0}


def test_the_interval_is_over_seeds_of_the_mean_over_tasks():
    results = [run_of("a", s, f, 10, t) for s, f in enumerate((0.5, 0.7, 0.9))
               for t in ("t1", "t2")]
    summary = peers_report.summarize(results)["a"]
    assert summary["final_test"] == pytest.approx(0.7) and summary["seeds"] == 3
    assert summary["ci95"] == pytest.approx(4.303 * 0.2 / 3 ** 0.5, abs=1e-4)
    assert summary["start_test"] == 0.25 and summary["runs"] == 6
    assert peers_report.ci95([0.5]) is None


def test_a_task_a_system_has_not_finished_reads_as_a_dash():
    table = peers_report.table(peers_report.summarize(
        [run_of("a", 0, 0.5, 10, "t1"), run_of("a", 0, 0.7, 10, "t2"), run_of("b", 0, 0.9, 10, "t2")]))
    by_task = table.split("held-out by task", 1)[1].splitlines()
    assert re.fullmatch(r"a\s+0\.500\s+0\.700", by_task[1])
    assert re.fullmatch(r"b\s+-\s+0\.900", by_task[2]) and "nan" not in table


def test_a_version_that_took_over_after_the_budget_does_not_count():
    curve = [{"solver_calls": 0, "test": 0.1}, {"solver_calls": 40, "test": 0.3},
             {"solver_calls": 55, "test": 0.9}]
    assert [peers_report.at(curve, x) for x in (0, 39, 40, 48, 55)] == [0.1, 0.1, 0.3, 0.3, 0.9]
    lines = peers_report.curves([run_of("a", 0, 0.5, 20), run_of("a", 1, 1.0, 40)], points=2)
    assert lines["a"] == [(0.0, 0.25), (20.0, 0.375), (40.0, 0.75)]


def test_the_trace_keeps_each_take_over_and_the_better_only():
    trace = Trace()
    trace.offer(0, "a", 0.5)
    trace.offer(8, "b", 0.5)                  # equal: the earlier stays (a peer's rule)
    trace.offer(9, "c", 0.5, ties_win=True)   # equal, later wins (AdaptResult's rule)
    trace.offer(12, "d", 0.25)
    trace.offer(20, "e", None)
    assert [(c, s) for c, s, _ in trace.points] == [(0, sha_of("a")), (9, sha_of("c"))]
    assert set(trace.sources) == {sha_of(x) for x in "abcde"}


def rules() -> list:
    solver = (r"MARK-A [\s\S]*Problem: Calculate (?P<expr>[-+*/() \d]+)\.",
              lambda m: f"Answer: {arithmetic(m['expr'])}")
    # GEPA asks for the whole component in a code block; ours and OpenEvolve for SEARCH/REPLACE.
    return [(r"## Current Component", WHOLE), (r"SEARCH", EDIT.format(old="", new="MARK-A ")),
            solver]


def bench(tmp_path, url: str, *extra: str):
    args = ["bench", "peers", "--smoke", "--out", str(tmp_path / "out"), "--solver-url",
            f"sim@{url}", "--proposer-url", f"sim@{url}", "--json", *extra]
    return CliRunner().invoke(app, args)


def test_every_system_runs_on_equal_terms_and_a_rerun_reads_the_cache(tmp_path):
    with SimServer(latency_s=0.0, rules=rules()) as url:
        server = url
        result = bench(tmp_path, server, "--plot", str(tmp_path / "curves.png"))
        assert result.exit_code == 0, result.output
        figures = json.loads(result.output.strip().splitlines()[-1])
        systems = figures["systems"]
        assert list(systems) == list(SYSTEMS)
        budget = figures["settings"]["budget"]
        for name, s in systems.items():
            assert {"final_test", "ci95", "solver_calls"} <= set(s), name
            assert s["solver_calls"] > 0 and s["proposer_calls"] >= 1 and s["proposer_tokens"] > 0
            assert s["start_test"] == 0.0  # the seed never says MARK-A: the Solver is wrong
        # every system finds the MARK-A edit within the budget: held-out 1.0 at <= budget calls
        problem_ids = set()
        for name in SYSTEMS:
            run = json.loads((tmp_path / "out" / "runs" / "rg_basic_arithmetic" / name / "seed0"
                              / "result.json").read_text())
            assert run["final_test"] == 1.0, name
            # the held-out score per problem, for paired intervals: the same problems for all
            assert list(run["final_problems"].values()) == [1.0] * figures["settings"]["n_test"]
            problem_ids.add(tuple(sorted(run["final_problems"])))
            assert any(p["test"] == 1.0 and p["solver_calls"] <= budget for p in run["curve"])
        assert len(problem_ids) == 1
        assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
        assert re.search(r"best_valid\s+1\.000", result.output)
        # progress counts the grid's runs: the first and the last of them are numbered
        assert f"[1/{len(SYSTEMS)}] run rg:basic_arithmetic" in result.output
        assert f"[{len(SYSTEMS)}/{len(SYSTEMS)}] run rg:basic_arithmetic" in result.output
        again = bench(tmp_path, server)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output.strip().splitlines()[-1])["systems"] == systems
    assert "run rg:basic_arithmetic" not in again.output  # nothing was run again
    # a grid with one run unfinished is read with --finished: no server is reached (none
    # answers now), the finished runs' figures as before, the unfinished one left alone
    gone = tmp_path / "out" / "runs" / "rg_basic_arithmetic" / SYSTEMS[-1] / "seed0"
    (gone / "result.json").unlink()
    look = CliRunner().invoke(app, ["bench", "peers", "--smoke", "--out", str(tmp_path / "out"),
                                    "--finished", "--json"])
    assert look.exit_code == 0, look.output
    assert f"{len(SYSTEMS) - 1} of {len(SYSTEMS)} runs finished" in look.output
    seen = json.loads(look.output.strip().splitlines()[-1])["systems"]
    assert seen == {k: v for k, v in systems.items() if k != SYSTEMS[-1]}
    assert not (gone / "result.json").exists() and "run rg:" not in look.output


def test_bad_input_is_one_clear_line_with_a_hint(tmp_path, capsys):
    from harness_learning.cli.main import main

    for args, words in ((["--system", "dspy"], "unknown system(s) dspy"),
                        (["--config", str(tmp_path / "none.toml")], "no bench config"),
                        (["--scale", "huge"], "no [huge] table")):
        with pytest.raises(SystemExit) as exit_:
            main(["bench", "peers", "--out", str(tmp_path / "o"), *args])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and words in err, (args, err)
        assert "· hint:" in err
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.slow
def test_gepa_with_the_real_local_models(tmp_path, monkeypatch, local_model_url):
    """One small real path: SmolLM2 answers and reflects once or twice (a test of the path, so
    the fast model in both roles; the bench's Qwen2.5-Coder Proposer spent about a minute per
    reflection here, and its whole run is tested by the Python API example's test).

    GEPA skips reflection on a minibatch the seed answers perfectly (`skip_perfect_score`, on
    in the bench), and which problems the smoke split draws is random: in one fresh-clone run
    SmolLM2 answered all 4 dev problems, so nothing reflected within 8 Solver calls. Here it
    always reflects, so the path under test runs every time."""
    from harness_learning_lab.bench import peers_gepa

    bench_settings = peers_gepa.load_settings

    def reflect_always(path):
        settings = bench_settings(path)
        settings["reflection"]["skip_perfect_score"] = False
        return settings

    monkeypatch.setattr(peers_gepa, "load_settings", reflect_always)
    result = CliRunner().invoke(app, ["bench", "peers", "--smoke", "--out", str(tmp_path),
                                      "--system", "gepa", "--budget", "8", "--proposer-url",
                                      f"smollm2@{local_model_url}", "--json"])
    assert result.exit_code == 0, result.output
    gepa = json.loads(result.output.strip().splitlines()[-1])["systems"]["gepa"]
    assert gepa["proposer_calls"] >= 1 and gepa["proposer_tokens"] > 0
    assert 8 <= gepa["solver_calls"] <= 8 + 4  # the seed's 4 dev problems, then a minibatch
    assert 0.0 <= gepa["final_test"] <= 1.0


def test_the_racing_scale_lets_the_solver_budget_end_each_search():
    """The racing question needs rounds left when the budget runs out: otherwise racing's saving
    could buy nothing (what the cpu scale showed)."""
    from harness_learning.graphs.adapter.racing import RaceRule
    from harness_learning_lab.bench.peers import load_settings

    settings = load_settings(scale="racing")
    assert settings["systems"] == ["best_valid", "racing"]
    rounds = settings["max_proposals"] // settings["candidates"]
    full_round = settings["feedback"] + settings["candidates"] * settings["n_dev"]
    raced_round = settings["feedback"] + RaceRule().max_problems(settings["candidates"],
                                                                 settings["n_dev"])
    assert raced_round < full_round
    assert rounds * raced_round > 2 * settings["budget"]  # the cap is far from binding
    assert all(task in settings["task_configs"] for task in settings["tasks"])


def test_the_cpu_scale_has_four_reasoning_types_and_qa_and_one_edit_format():
    """The issue's bench: at least 4 reasoning-gym types and a QA task. Our edits there are
    SEARCH/REPLACE on QA too (a whole QA seed would not fit the Proposer's tokens); the full
    scale keeps each track's own format."""
    from types import SimpleNamespace

    from harness_learning_lab.bench.peers import Endpoints, base_config, load_settings

    ends = Endpoints("http://127.0.0.1:1/v1", "solver", "http://127.0.0.1:2/v1", "proposer")
    proxy = SimpleNamespace(base_url="http://127.0.0.1:3/v1")
    cpu, full = load_settings(scale="cpu"), load_settings()
    reasoning = [t for t in cpu["tasks"] if t.startswith("rg:")]
    assert len(reasoning) >= 4 and "musique" in cpu["tasks"]
    assert all(task in cpu["task_configs"] for task in reasoning)
    assert base_config(cpu, ends, proxy, "musique", 0, {})["edit_format"] == "search_replace"
    assert base_config(full, ends, proxy, "musique", 0, {})["edit_format"] == "whole_program"
    assert base_config(full, ends, proxy, "rg:chain_sum", 0, {})["edit_format"] == "search_replace"


def test_a_peers_root_log_handlers_leave_with_its_run(tmp_path) -> None:
    """OpenEvolve adds root handlers per run: without this, a later run's lines land in an
    earlier run's log file."""
    import logging

    from harness_learning_lab.bench.peers_systems import own_root_handlers

    root, kept = logging.getLogger(), logging.NullHandler()
    root.addHandler(kept)
    try:
        with own_root_handlers():
            added = logging.FileHandler(tmp_path / "run1.log")
            root.addHandler(added)
            root.warning("during the run")
        root.warning("after the run")
        assert added not in root.handlers and kept in root.handlers
        assert added.stream is None  # closed
        assert (tmp_path / "run1.log").read_text() == "during the run\n"
    finally:
        root.removeHandler(kept)


def test_the_markdown_table_carries_each_systems_row_and_a_dash_for_a_missing_task():
    runs = [run_of("a", 0, 0.5, 10, "t1"), run_of("a", 0, 0.7, 12, "t2"),
            {**run_of("b", 0, 0.9, 40, "t2"), "budget": 40}]
    lines = peers_report.markdown(peers_report.summarize(runs)).splitlines()
    assert lines[0].split(" | ")[2:4] == ["t1", "t2"] and lines[1] == "|" + "---|" * 7
    assert lines[2] == "| `a` | 0.600 | 0.500 | 0.700 | 11.0 / - | 0/2 | 2.0 (2) |"
    assert lines[3] == "| `b` | 0.900 | - | 0.900 | 40.0 / 40 | 1/1 | 2.0 (2) |"
