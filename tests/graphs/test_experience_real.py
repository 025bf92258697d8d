"""The experience library with real models: SmolLM2-135M as Solver and Proposer, the real
sandbox and log, through the installed entry point. A first run with the `plan` operator writes
the library at its end; a second run with operators off reads it: the plan block comes back as
a learned operator (origin experience:ID), `--json` names the entry, and the second run's end
adds its outcome to the same entry; or, when the block lost in the first run and its posterior
mean is below the bar, the second run logs it as left out. No entry holds a question or answer
of either split."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from cli_run import cli

from harness_learning.graphs.adapter.experience import held_texts
from harness_learning.graphs.adapter.inputs import open_task
from harness_learning.graphs.adapter.run import load_config
from harness_learning.harnesses.experience import Library
from harness_learning.harnesses.experience.entry import operator_id, texts
from harness_learning.harnesses.experience.redact import environment_secrets
from harness_learning.harnesses.rundir import RunDir
from harness_learning.report import load_run
from harness_learning.report.html import render_html

pytestmark = pytest.mark.timeout(900)
SMOL = "local:smollm2-135m"
PLAN = operator_id("plan")


def adapt(run_dir, library, *extra) -> list:
    """Prefilling the Proposer's prompt is most of each run's time on CPU (the operator's and
    the library's candidates wait behind it on the one SmolLM2 server): the prompt leaves out
    the building-block menu, which neither the library nor a check here reads."""
    return ["adapt", "--task", "rg:basic_arithmetic", "--run-dir", run_dir, "--solver", SMOL,
            "--proposer", SMOL, "--rounds", "1", "--candidates", "1", "--feedback", "1",
            "--selection", "2", "--dev", "3", "--test", "1", "--proposer-max-tokens", "64",
            "--no-block-menu", "--concurrency", "2", "--experience", library, *extra]


@pytest.fixture(scope="module")
def runs(local_model_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("experience_real")
    library = tmp / "library"
    first = cli(*adapt(tmp / "a", library, "--operators", "plan", "--operators-per-round", "1"))
    assert first.returncode == 0, first.stderr[-3000:]
    with Library(library) as lib:
        written = lib.entries()
    second = cli(*adapt(tmp / "b", library, "--operators", "none", "--json"))
    assert second.returncode == 0, second.stderr[-3000:]
    return tmp, library, written, second


@pytest.mark.slow
def test_a_real_run_writes_the_library_and_the_next_one_reads_it(runs):
    tmp, library, written, second = runs
    plan = next(e for e in written if e.id == PLAN)
    assert [(o.round, o.candidate, o.task) for o in plan.outcomes] == [(1, 2, "rg:basic_arithmetic")]
    with RunDir(tmp / "b").open_store() as store:
        origins = {p.id: p.origin for p in store.iter_proposals()}
        plans = [e.payload for e in store.iter_events(kinds=["experience_plan"])]
    learned = [pid for pid, origin in origins.items() if origin == f"experience:{PLAN[:12]}"]
    with Library(library) as lib:
        after = next(e for e in lib.entries() if e.id == PLAN)
    if not plan.outcomes[0].success and not learned:
        # its one loss put it below the bar (`choice.TRY_BAR`): read, and left out, said so
        (event,) = plans
        assert event["left_out"][f"experience:{PLAN}"] < event["bar"], event
        page = render_html(load_run(tmp / "b"))  # the report says so in that round's card
        assert f"learned choice: round {event['round']}: tried " in page
        assert len(after.outcomes) == 1
        return
    assert learned, (origins, plans)  # the plan block, learned: operators were off in this run
    named = json.loads(second.stdout.strip().splitlines()[-1])["experience"]
    assert named[learned[0]]["from"] == PLAN
    assert len({o.run for o in after.outcomes}) == 2


def run_held(run_dir) -> tuple[str, list[str]]:
    """A run's id and its questions, gold answers and split secret."""
    config = load_config(run_dir)
    with RunDir(run_dir).open_store() as store:
        run_id = store.get_run().run_id
    return run_id, [h for h in held_texts(open_task(config), config)
                    if h.strip() and h not in environment_secrets()]


def leaks(text: str, held: list[str]) -> list[str]:
    return [h for h in held if h in text]


@pytest.mark.slow
def test_no_real_entry_holds_a_question_or_answer(runs):
    """Each run's splits are drawn from its own secret: an outcome holds nothing of its run's
    questions and answers, and an entry's code and summary (kept from one of the runs it came
    from) nothing of that run's. (Checking one run's one-digit answers against another run's
    unredacted text would flag every '1' in a task description.)"""
    tmp, library, *_ = runs
    held = dict(run_held(tmp / name) for name in ("a", "b"))
    assert all(len(h) >= 8 for h in held.values())  # 4 problems' questions and answers, secret
    with Library(library) as lib:
        entries = lib.entries()
    for entry in entries:
        for o in entry.outcomes:
            for text in texts(replace(entry, summary="", diff="", operator=None, blocks=(),
                                      outcomes=(o,))):
                assert not leaks(text, held[o.run]), (entry.short, o.run, text[:200])
        code = [entry.summary, entry.diff, *(part for block in entry.blocks for part in block)]
        assert any(not any(leaks(c, held[o.run]) for c in code) for o in entry.outcomes), \
            (entry.short, [leaks(c, held[o.run]) for o in entry.outcomes for c in code])
