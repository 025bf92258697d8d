"""The experience library in a run (graphs/adapter/experience*.py): a run writes its judged
changes at its end, redacted; a second run on the same library gets the first's winning change
as a candidate of origin experience:ID, its Proposer is shown it as a past success, and its
end adds its own outcome to the same entry. Real adapter runs (real sandbox, real log) with
scripted models: this is control flow; tests/graphs/test_experience_real.py runs SmolLM2."""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace
from types import SimpleNamespace

import pytest
from rich.console import Console
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.experience import left_out_lines, shown_ids
from harness_learning.graphs.adapter.experience_search import PAST_HEADING, operator_plan
from harness_learning.graphs.adapter.inputs import start_source
from harness_learning.graphs.adapter.run import prepare, run_adaptation
from harness_learning.harnesses.experience import Entry, Library, Outcome, Signature
from harness_learning.harnesses.experience.entry import operator_id, texts
from harness_learning.harnesses.rundir import RunDir
from harness_learning.report import load_run
from harness_learning.report.html import render_html
from harness_learning.report.terminal import candidate_detail, run_summary

CAREFULLY = ('<<<<<<< SEARCH\nPROMPT = """Solve the problem. Think briefly, then give the final '
             'answer on the last line\n=======\nPROMPT = """Solve the problem. Think CAREFULLY, '
             'then give the final answer on the last line\n>>>>>>> REPLACE\n')
"""Makes `solver_rule` right on every problem: a gain."""
TASK = dict(n_dev=4, test_offset=30, n_test=2)


class ScriptedProposer(ScriptedModel):
    """A scripted Proposer with the client config the adapter reads (no log-probs)."""

    config = SimpleNamespace(returns_logprobs=False, model="scripted")


def run(tmp, name: str, library, proposer_reply: str, **kw):
    proposer = ScriptedProposer(lambda prompt, params: proposer_reply)
    config = prepare(AdaptConfig(  # a task by reference, so `experience add` reopens it
        task="scripted_sums:SumTask", task_options=TASK, run_dir=str(tmp / name), rounds=1,
        candidates=1, policy="strict", edit_format="search_replace", feedback=2, selection=2,
        concurrency=4, repair_turns=0, experience=str(library), **kw)).config
    ctx = AdapterContext.from_config(config, task=SumTask(**TASK),
                                     solver=ScriptedModel(solver_rule), proposer=proposer)
    return config, asyncio.run(run_adaptation(config, context=ctx)), proposer


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("experience")
    library = tmp / "library"
    first = run(tmp, "a", library, CAREFULLY)
    with Library(library) as lib:
        after_first = lib.entries()
    second = run(tmp, "b", library, "I would not change anything.")
    with Library(library) as lib:
        after_second = lib.entries()
    return first, second, after_first, after_second


def test_a_run_writes_one_entry_per_judged_change_with_its_outcome(two_runs):
    (config, final, _), _, entries, _ = two_runs
    (edit,) = entries
    (won,) = edit.outcomes
    assert won.verdict == "adopted" and won.selection_gain > 0 and won.success
    assert (won.round, won.candidate, won.task) == (1, 0, "scripted_sums:SumTask")
    assert won.description == SumTask.description and "Think CAREFULLY" in edit.diff
    with RunDir(config.path).open_store() as store:
        assert won.run == store.get_run().run_id
        seed = final["rounds"][0]["current_sha"]
        wrong = sum(1 for e in store.iter_evaluations(purpose="feedback")
                    if e.sha == seed and e.result.score == 0)
        # the report's signature: the seed's wrong feedback answers (odd first terms)
        assert won.signature.error_kinds == ((("wrong", wrong),) if wrong else ())
        assert [e.payload["entries"] for e in store.iter_events(kinds=["experience_written"])] == [1]


def test_no_entry_holds_a_question_or_answer_of_any_split(two_runs):
    *_, entries = two_runs
    task = SumTask(**TASK)
    held = [s for p in [*task.dev(), *task.test()] for s in (p.inputs["question"], p.gold)]
    for entry in entries:
        for text in texts(entry):
            leaked = [h for h in held if h in text]
            assert not leaked, (entry.short, text, leaked)


def test_the_next_run_tries_the_past_change_and_shows_it_as_a_success(two_runs):
    first, (config, final, proposer), entries, _ = two_runs
    edit = next(e for e in entries if e.kind == "edit")
    cands = final["rounds"][0]["candidates"]
    learned = [c for c in cands if c["origin"] == f"experience:{edit.short}"]
    assert len(learned) == 1 and learned[0]["valid"] and final["rounds"][0]["adopted"]
    assert learned[0]["selection_score"] > final["rounds"][0]["current_selection_score"]
    assert PAST_HEADING in proposer.calls[0] and "# gain +" in proposer.calls[0]
    with RunDir(config.path).open_store() as store:
        named = shown_ids(store)
    assert named["r1-c0"]["shown"] == [edit.id]
    assert named[learned[0]["proposal_id"]]["from"] == edit.id
    run_record = load_run(config.path)
    text = rendered(run_summary(run_record))
    assert f"{learned[0]['proposal_id']}: came from entry {edit.short}" in text
    assert f"r1-c0: was shown past successes {edit.short}" in text
    detail = rendered(candidate_detail(run_record, run_record.candidate("r1-c0")))
    assert f"experience: was shown past successes {edit.short}" in detail
    html = render_html(run_record)
    assert f"experience: came from entry {edit.short}" in html


def rendered(renderable) -> str:
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_entry_gains_the_second_runs_outcome(two_runs):
    *_, after = two_runs
    edit = next(e for e in after if e.kind == "edit")
    assert len({o.run for o in edit.outcomes}) == 2 and all(o.success for o in edit.outcomes)


def plan_ctx(tmp_path, library: str, operators="auto"):
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), operators=operators,
                         operators_per_round=10, experience=library
                         ).with_track_defaults("reasoning")
    store = RunDir(tmp_path / "run").open_store()
    source = start_source(config, SumTask())
    sha = store.put_version(source, parent=None, round_=0, note="seed")
    ctx = SimpleNamespace(config=config, store=store, task=SumTask(),
                          problems={p.id: p for p in SumTask().dev()})
    return ctx, sha


def test_an_empty_library_plans_exactly_as_auto(tmp_path):
    ctx, sha = plan_ctx(tmp_path, "")
    auto = asyncio.run(operator_plan(ctx, sha, 1, (), []))
    ctx.config = ctx.config.replace(experience=str(tmp_path / "empty"))
    assert asyncio.run(operator_plan(ctx, sha, 1, (), [])) == auto
    assert auto[:3] == ["interpreter", "plan", "verify"]


def test_measured_effect_on_a_similar_task_reorders_and_prunes_the_plan(tmp_path):
    wins = tuple(Outcome("old", i, 2, "sums", SumTask.description, Signature((("wrong", 2),)),
                         "adopted", None, 0.5, 1.0) for i in range(30))
    losses = tuple(replace(o, verdict="worse", score=0.0) for o in wins)
    with Library(tmp_path / "lib") as lib:
        lib.add([Entry(operator_id("vote"), "operator", "operator:vote", "block vote",
                       operator="vote", outcomes=wins),
                 Entry(operator_id("interpreter"), "operator", "operator:interpreter",
                       "block interpreter", operator="interpreter", outcomes=losses)])
    ctx, sha = plan_ctx(tmp_path, str(tmp_path / "lib"))
    plan = asyncio.run(operator_plan(ctx, sha, 1, (), []))
    # vote first; interpreter, 30 losses on this task, is left out; untried blocks stay
    assert plan[0] == "vote" and "interpreter" not in plan and "plan" in plan
    (event,) = [e.payload for e in ctx.store.iter_events(kinds=["experience_plan"])]
    assert event["round"] == 1 and event["tried"] == plan and event["bar"] == 0.5
    assert list(event["left_out"]) == ["interpreter"] and event["left_out"]["interpreter"] < 0.5
    line = (f"round 1: tried {', '.join(plan)}; left out, expected to help below 0.5: interpreter "
            f"({event['left_out']['interpreter']:.2f})")
    assert load_run(tmp_path / "run").left_out == {1: line}
    ctx.config = ctx.config.replace(operators="none")  # library operators still come as arms
    assert asyncio.run(operator_plan(ctx, sha, 1, (), [])) == [f"experience:{operator_id('vote')}"]


def hl(capsys, *args) -> tuple[int, str, str]:
    """`harness-learn ARGS` in this process: (exit code, stdout, stderr)."""
    from harness_learning.cli.main import main

    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err


def test_the_experience_commands(two_runs, tmp_path, capsys):
    (a, *_), (b, *_), _, after = two_runs
    lib = tmp_path / "lib"
    code, out, _ = hl(capsys, "experience", "add", a.run_dir, b.run_dir, "--to", lib)
    assert code == 0 and f"{a.run_dir}: 1 entries added" in out
    code, out, _ = hl(capsys, "experience", "list", lib)
    (edit,) = after
    assert code == 0 and f"{edit.short}  edit" in out and "2 outcome(s), 2 gained" in out
    code, out, _ = hl(capsys, "experience", "show", lib, edit.short)
    assert code == 0 and "<<<<<<< SEARCH" in out and out.count(" adopted, selection gain +") == 2
    code, out, _ = hl(capsys, "experience", "export", lib, "--to", tmp_path / "x.jsonl")
    assert code == 0 and "1 entries" in out
    code, out, _ = hl(capsys, "experience", "import", tmp_path / "copy", tmp_path / "x.jsonl")
    with Library(tmp_path / "copy") as copy, Library(lib) as held:
        assert copy.entries() == held.entries()
    code, out, _ = hl(capsys, "experience", "prune", lib, "--run", edit.outcomes[0].run[:8])
    assert code == 0 and "0 entries dropped, 1 trimmed" in out
    code, _, err = hl(capsys, "experience", "prune", lib)
    assert code == 2 and err.count("\n") == 1 and "--run RUN or --invalid" in err


def test_bad_input_is_one_line_and_changes_nothing(tmp_path, capsys):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "library.sqlite").write_bytes(b"no database" * 50)
    for args in (["list", tmp_path / "bad"], ["add", tmp_path, "--to", tmp_path / "bad"],
                 ["list", "postgresql://me@db/lib"], ["add", tmp_path, "--to", tmp_path / "l"]):
        code, _, err = hl(capsys, "experience", *args)
        assert code != 0 and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    smol = "local:smollm2-135m"  # a run on a damaged library: refused before it writes
    code, _, err = hl(capsys, "adapt", "--task", "rg:basic_arithmetic", "--run-dir",
                      tmp_path / "run", "--solver", smol, "--proposer", smol,
                      "--experience", tmp_path / "bad")
    assert code == 2 and "not a readable experience library" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()
    assert (tmp_path / "bad" / "library.sqlite").read_bytes() == b"no database" * 50


def test_an_entry_that_no_longer_applies(tmp_path):
    from harness_learning.evals.judge import check_candidate
    from harness_learning.graphs.adapter.experience_propose import ExperienceProposer
    from harness_learning.graphs.adapter.propose import ProposalContext
    from harness_learning.graphs.adapter.slots import arm_slot

    ctx, sha = plan_ctx(tmp_path, str(tmp_path / "lib"), operators="none")
    stale = Entry("e" * 64, "edit", "proposer", "changed PROMPT",
                  blocks=(("PROMPT = 'gone'", "PROMPT = 'new'"),),
                  outcomes=(Outcome("old", 1, 0, "sums", SumTask.description, Signature(),
                                    "adopted", None, 0.2, 0.9),))
    with Library(tmp_path / "lib") as lib:
        lib.add([stale])
    assert asyncio.run(operator_plan(ctx, sha, 1, (), [])) == []  # its SEARCH is not there
    source = ctx.store.get_version_source(sha)

    class Judge:
        def check(self, text, finish, fmt):
            return check_candidate(source, text, fmt, finish, track="reasoning", line_limit=200)

    def proposed(arm: str):
        context = ProposalContext(ctx, arm_slot(2, arm), {"round": 1, "current_sha": sha},
                                  source, Judge())
        (made,) = asyncio.run(ExperienceProposer().propose(context))
        done = made.completion
        return made, context.judge.check(done.text, done.finish_reason, made.edit_format)

    made, outcome = proposed("experience:" + "f" * 64)  # pruned since it was planned
    assert made.origin == "experience:" + "f" * 12 and not outcome.valid
    assert outcome.invalid_kind == "no_edit_found"
    assert "no longer in the library" in made.messages[0]["content"]
    made, outcome = proposed("experience:" + stale.id)  # planned, then the source moved on
    assert outcome.invalid_kind == "unmatched_search" and outcome.invalid_reason


def test_a_held_out_gain_is_read_where_eval_measured_it(two_runs, tmp_path):
    import shutil

    from harness_learning.graphs.adapter.experience import extract
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.harnesses.results import ProblemResult

    (a, final, _), *_ = two_runs
    copy = shutil.copytree(a.run_dir, tmp_path / "a")
    seed, chosen = final["rounds"][0]["current_sha"], final["rounds"][0]["chosen_sha"]
    with RunDir(copy).open_store() as store:
        store.put_results(seed, "test", 0, [ProblemResult("t0", "x", 0.0),
                                            ProblemResult("t1", "y", 0.0)])
        store.put_results(chosen, "test", 1, [ProblemResult("t0", "x", 1.0),
                                              ProblemResult("t1", "y", 1.0)])
        (entry,) = extract(store, SumTask(**TASK), load_config(copy))
    (won,) = entry.outcomes
    # held out 0.0 -> 1.0: a gain no selection can show from its parent's 0.5 or more
    assert won.held_out_gain == 1.0 and won.gain == 1.0 and won.selection_gain != 1.0
    # `eval` adds them to the run's library (the test results above are all it needs)
    from harness_learning.graphs.adapter.final_eval import final_evaluation

    run = RunDir(copy)  # the copy writes a library of its own, not the module's
    run.write_config({**run.read_config(), "experience": str(tmp_path / "own")})
    asyncio.run(final_evaluation(copy, task=SumTask(**TASK)))
    with Library(tmp_path / "own") as lib:
        outcomes = {o.key: o for e in lib.entries() for o in e.outcomes}
    assert outcomes[won.key].held_out_gain == 1.0


def test_past_successes_are_whole_diffs_within_the_token_budget():
    from harness_learning.graphs.adapter.experience_search import (
        CHARS_PER_TOKEN,
        section,
        worked_diffs,
    )

    picks = [(Entry(c * 64, "edit", "proposer", f"changed {c}", blocks=(("a", "b"),),
                    diff=f"@@\n-a{c}\n+b{c}"), 0.25) for c in "abc"]
    lines, shown = worked_diffs(picks, 1000)
    assert shown == ["a" * 64, "b" * 64, "c" * 64]
    assert lines[0] == "# gain +0.250 (changed a; entry aaaaaaaaaaaa)" and "+ba" in lines
    one = len(section(worked_diffs(picks[:1], 1000)[0]))
    lines, shown = worked_diffs(picks, -(-one // CHARS_PER_TOKEN))
    assert shown == ["a" * 64] and len(section(lines)) <= one + CHARS_PER_TOKEN
    assert worked_diffs(picks, 5) == ([], [])


def test_a_left_out_line_names_the_likeliest_arms_by_short_id_and_counts_the_rest() -> None:
    ids = [f"{i:x}" * 64 for i in range(1, 8)]
    payload = {"round": 2, "bar": 0.5, "tried": [f"experience:{ids[0]}"],
               "left_out": {"vote": 0.34, **{f"experience:{i}": 0.05 for i in ids[1:]}}}
    store = SimpleNamespace(iter_events=lambda kinds: [SimpleNamespace(payload=payload)])
    (line,) = left_out_lines(store).values()
    assert line.startswith(f"round 2: tried experience:{ids[0][:12]}; left out, expected to "
                           "help below 0.5: vote (0.34), experience:")
    assert line.endswith(" and 3 more") and ids[1] not in line and ids[1][:12] in line
