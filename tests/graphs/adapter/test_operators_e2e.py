"""Operator candidates in a real adapter run (real sandbox workers, real log; the models are
scripted: this is control flow, and the demo test runs the same path with real local models).
The operator's candidate is judged like the Proposer's, records its origin, wins on its score,
and is not proposed again on the version that already holds its block."""

from __future__ import annotations

import asyncio
import re

from scripted_sums import QUESTION, SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.rundir import RunDir


def solver(prompt: str, params: dict) -> str:
    """Writes a correct program when asked for one; otherwise the off-by-one sums rule."""
    if "Write a short Python program" in prompt:
        a, b = QUESTION.search(prompt).groups()
        return f"```python\nprint({a} + {b})\n```"
    return solver_rule(prompt, params)


def test_an_operator_candidate_is_judged_logged_with_its_origin_and_adopted(tmp_path, scripted):
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), rounds=2, candidates=1,
                         policy="best_valid", edit_format="search_replace", feedback=4,
                         selection=6, concurrency=6, operators="interpreter,plan",
                         operators_per_round=1).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(6), solver=scripted(solver),
                                     proposer=scripted(lambda prompt, params: "No edit today."))
    final = asyncio.run(run_adaptation(config, context=ctx))
    first, second = final["rounds"]
    by_origin = {c["origin"]: c for c in first["candidates"]}
    assert set(by_origin) == {"proposer", "operator:interpreter"}
    assert by_origin["proposer"]["invalid_kind"] == "no_edit_found"
    assert by_origin["operator:interpreter"]["valid"]
    assert by_origin["operator:interpreter"]["selection_score"] == 1.0
    assert first["adopted"] and first["chosen_sha"] == by_origin["operator:interpreter"]["sha"]
    # round 2 works on the interpreter version: that block is in it, the next one is tried
    assert [c["origin"] for c in second["candidates"]] == ["proposer", "operator:plan"]
    with RunDir(config.path).open_store() as store:
        logged = {p.id: p for p in store.iter_proposals()}
        source = store.get_version_source(final["current_sha"])
    assert logged["r1-c2"].origin == "operator:interpreter" and logged["r1-c2"].valid
    assert logged["r1-c0"].origin == "proposer" and logged["r1-c0"].invalid_kind == "no_edit_found"
    assert logged["r1-c2"].edit_format == "whole_program"
    assert re.search(r"return with_interpreter\(tools, build_graph_before_interpreter\)", source)


def test_an_unknown_operator_is_one_line_before_anything_is_written(tmp_path, capsys) -> None:
    import pytest

    from harness_learning.cli.errors import EXIT_USAGE
    from harness_learning.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["adapt", "--task", "rg:basic_arithmetic", "--run-dir", str(tmp_path / "run"),
              "--operators", "interpreter,nope"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == EXIT_USAGE and line.startswith("harness-learn: error: ")
    assert "unknown operator(s) nope; known: interpreter, plan" in line
    assert not (tmp_path / "run").exists()


def few_shot_solver(prompt: str, params: dict) -> str:
    """The sums rule on the prompt's last question, right every time after solved examples."""
    found = QUESTION.findall(prompt)
    if not found:
        return "Answer: ?"
    a, b = map(int, found[-1])
    return f"Answer: {a + b if 'Solved examples' in prompt or a % 2 == 0 else a + b + 1}"


def few_shot_run(tmp_path, scripted, split: str) -> tuple[dict, AdaptConfig]:
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / split), rounds=1, candidates=1,
                         policy="best_valid", edit_format="search_replace", feedback=4,
                         selection=6, concurrency=6, operators="few_shot", split=split,
                         ).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(14), solver=scripted(few_shot_solver),
                                     proposer=scripted(lambda prompt, params: "No edit today."))
    return asyncio.run(run_adaptation(config, context=ctx)), config


def test_few_shot_demonstrates_feedback_problems_no_selection_or_report_holds(tmp_path, scripted):
    final, config = few_shot_run(tmp_path, scripted, "held_out")
    (first,) = final["rounds"]
    by_origin = {c["origin"]: c for c in first["candidates"]}
    assert by_origin["operator:few_shot"]["valid"], by_origin["operator:few_shot"]
    assert by_origin["operator:few_shot"]["selection_score"] == 1.0 and first["adopted"]
    with RunDir(config.path).open_store() as store:
        source = store.get_version_source(final["current_sha"])
        scored = {e.problem_id for e in store.iter_evaluations(purpose="selection")}
        shown = {e.problem_id for e in store.iter_evaluations(purpose="feedback")}
    demos = set(re.findall(r"\('What is (\d+) \+ \d+\?', '\d+'\)", source))
    assert len(demos) == 3
    demo_ids = {f"d{i}" for i in demos}
    assert not demo_ids & scored and not demo_ids & shown, (demo_ids, scored, shown)


def test_few_shot_is_not_offered_under_the_papers_split(tmp_path, scripted):
    final, _ = few_shot_run(tmp_path, scripted, "paper")
    assert [c["origin"] for c in final["rounds"][0]["candidates"]] == ["proposer"]
