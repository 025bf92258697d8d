"""A Proposer caught in a loop answers `X = 1+1+...+1`: a syntax tree a thousand levels deep,
which the parser takes and Python's recursive tree walkers do not. In a real adapter run (real
sandbox and log; scripted models, as this is control flow) the answer is refused once, by the
compiler's depth limit, and nothing that reads the run later (the next round's run memory,
`show`, the report, the experience library) raises on it."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.compiler import MAX_DEPTH
from harness_learning.report import load_run
from harness_learning.report.html import render_html
from harness_learning.report.terminal import run_summary

LINE = 'PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line'
LOOPING = f"<<<<<<< SEARCH\n{LINE}\n=======\nX = 1{'+1' * 1000}\n{LINE}\n>>>>>>> REPLACE\n"


def test_a_looping_answer_is_refused_and_every_reader_of_the_run_survives_it(tmp_path):
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), rounds=2, candidates=1,
                         policy="best_valid", edit_format="search_replace", feedback=2,
                         selection=2, concurrency=2, repair_turns=1,
                         experience=str(tmp_path / "library")).with_track_defaults("reasoning")
    proposer = ScriptedModel(lambda prompt, params: LOOPING)
    ctx = AdapterContext.from_config(config, task=SumTask(6), solver=ScriptedModel(solver_rule),
                                     proposer=proposer)
    final = asyncio.run(run_adaptation(config, context=ctx))
    judged = [c for r in final["rounds"] for c in r["candidates"]]
    assert len(judged) == 2 and all(c["invalid_kind"] == "syntax" for c in judged)
    assert f"over the limit of {MAX_DEPTH}" in judged[1]["invalid_reason"]
    # round 2's prompt carried round 1's refusal, summarised by line counts alone
    memory = "r1 c0 proposer: +1/-0 lines -> invalid, syntax: nested 1003 levels deep"
    assert any(memory in call for call in proposer.calls[2:])
    run = load_run(config.path)
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(run_summary(run))
    assert "nested 1003 levels deep" in console.export_text()
    assert "nested 1003 levels deep" in render_html(run)
    assert any((tmp_path / "library").iterdir())  # the run's judged changes were written
