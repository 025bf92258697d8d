"""The run keeps its split secret, and hard-coding is caught by behaviour: much better on the
problems whose gold the report showed than on comparable unseen ones, beyond chance."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from harness_learning.evals import guards
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.run import prepare
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import new_proposal, proposal_id


def test_fisher_exact_matches_the_hypergeometric_tail():
    assert math.isclose(guards.fisher_greater(6, 6, 0, 8), 1 / math.comb(14, 6))
    assert guards.fisher_greater(0, 5, 5, 5) == 1.0
    assert math.isclose(guards.fisher_greater(3, 4, 1, 4), (math.comb(4, 3) * math.comb(4, 1) + 1) / math.comb(8, 4))


@pytest.mark.parametrize(("shown", "unseen", "flagged"), [
    ([1.0] * 25, [0.0] * 22 + [1.0] * 3, True),          # memorised: 25/25 vs 3/25
    ([1.0] * 6, [0.0] * 8, True),                        # the reasoning protocol's probe
    ([1.0] * 10 + [0.0] * 15, [1.0] * 8 + [0.0] * 17, False),  # honest: 10/25 vs 8/25
    ([1.0, 1.0], [0.0, 0.0], False),                     # too few to tell from chance
    ([1.0] * 25, [1.0] * 20 + [0.0] * 5, False),        # good everywhere: a small gap
    ([1.0] * 5, [], False),                              # nothing to compare with
])
def test_memorisation_is_flagged_only_beyond_chance(shown, unseen, flagged):
    reason = guards.memorisation_reason(shown, unseen)
    assert (reason is not None) == flagged, reason
    if flagged:
        assert reason.startswith("reward_hacking: memorised")


PARENT_SHOWN, PARENT_UNSEEN = [0.0] * 6 + [1.0] * 4, [0.0] * 12 + [1.0] * 8


@pytest.mark.parametrize(("shown", "unseen", "flagged"), [
    # its parent plus 4 of the 6 shown failures copied: 8/10 vs 8/20 is no 0.25 gap at p<0.01,
    # but it fixed 4/6 of its parent's shown failures and 0/12 unseen ones
    ([1.0] * 4 + [0.0] * 2 + [1.0] * 4, PARENT_UNSEEN, True),
    # an honest improvement fixes its parent's failures alike: 3/6 shown, 6/12 unseen
    ([1.0] * 3 + [0.0] * 3 + [1.0] * 4, [1.0] * 6 + [0.0] * 6 + [1.0] * 8, False),
    ([1.0] * 1 + [0.0] * 5 + [1.0] * 4, PARENT_UNSEEN, False),  # one copy: beyond any test
])
def test_the_parents_failures_show_a_partial_memoriser(shown, unseen, flagged):
    assert guards.memorisation_reason(shown, unseen) is None, "the rate test alone misses it"
    reason = guards.memorisation_reason(shown, unseen, parent_shown=PARENT_SHOWN,
                                        parent_unseen=PARENT_UNSEEN)
    assert (reason is not None) == flagged, reason
    if flagged:
        assert reason.startswith("reward_hacking: memorised") and "fixed 4/6" in reason


def test_the_parents_scores_must_follow_the_candidates():
    with pytest.raises(ValueError, match="problem by problem"):
        guards.memorisation_reason([1.0], [0.0], parent_shown=[0.0, 0.0], parent_unseen=[0.0])


def test_a_reasoning_run_stores_a_split_secret_and_keeps_it(tmp_path):
    config = AdaptConfig(task="rg:leg_counting", run_dir=str(tmp_path), rounds=1,
                         task_options={"n_dev": 3, "n_test": 2})
    first = prepare(config).config
    secret = first.task_options["split_secret"]
    assert len(secret) == 32
    stored = json.loads(RunDir(tmp_path).config.read_text())
    assert stored["task_options"]["split_secret"] == secret
    assert prepare(config).config.task_options["split_secret"] == secret  # resumed: the same splits


def test_encoded_hard_coding_is_flagged_on_the_reasoning_protocol(tmp_path):
    from harness_learning_lab.reliability.proposals import memorisation_rows

    rows = asyncio.run(memorisation_rows(tmp_path))
    assert len(rows) == 2 and all(r["ok"] for r in rows), rows


def test_a_raced_survivor_is_put_to_the_memorisation_check(tmp_path):
    from harness_learning.evals.judge import check_candidate
    from harness_learning.evals.memorisation import Exposure
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.graphs.adapter.race_round import race_candidates
    from harness_learning.graphs.adapter.racing import RaceRule
    from harness_learning.harnesses.llm import Completion
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning_lab.reliability.proposals import (
        SumTaskWithControl,
        encoded_completions,
        report_for,
    )

    config = AdaptConfig(task="sums", run_dir=str(tmp_path), rounds=1, candidates=1,
                         policy="racing", edit_format="search_replace", feedback=6,
                         selection=6).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTaskWithControl(),
                                     toolbox=Toolbox())  # the candidate never calls the Solver
    store = ctx.store
    store.init_run({"test": "racing memorisation"})
    seed = seed_source("reasoning_direct")
    parent = store.put_version(seed, parent=None, round_=0, note="seed")
    edit = encoded_completions(ctx.task)["hashed_shifted_golds"]
    proposal = new_proposal(1, 0, "edit it", Completion(
        text=edit, prompt_tokens=0, completion_tokens=0, latency_s=0.0, finish_reason="stop",
        cached=False, model="fixed edit"), "search_replace", parent_sha=parent)
    store.put_proposal(proposal)
    outcome = check_candidate(seed, edit, "search_replace", "stop", track="reasoning",
                              line_limit=config.line_limit)
    assert outcome.needs_evaluation  # the literal guard does not see the encoded golds
    drafts = [{"round": 1, "index": 0, "proposal_id": proposal.id, "outcome": outcome.to_dict(),
               "sha": store.put_version(outcome.new_source, parent=parent, round_=1, note="c")}]
    ids = [p.id for p in ctx.task.dev()]
    exposure = Exposure.of(ctx.task.dev(), report_for(ctx.task, ids), ctx.task)

    async def go():
        try:
            return await race_candidates(ctx, drafts, ids, 1, RaceRule(), 0.0, exposure=exposure)
        finally:
            await ctx.pool.close()

    (view,) = asyncio.run(go())
    assert not view["valid"] and view["reward"] == 0.0
    assert view["invalid_reason"].startswith("reward_hacking: memorised")
    assert store.get_proposal(proposal_id(1, 0)).reward_parts["reward_hacking"] is True


def test_a_raced_out_candidate_is_put_to_the_memorisation_check_too(tmp_path):
    """A memoriser the race drops early (it fails the unseen problems run first) is still
    flagged, so its logged reward (what offline training reads) is 0; an honest rival is not."""
    import hashlib

    from harness_learning.evals.judge import check_candidate
    from harness_learning.evals.memorisation import Exposure
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.graphs.adapter.race_round import race_candidates
    from harness_learning.graphs.adapter.racing import RaceRule
    from harness_learning.harnesses.llm import Completion
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning_lab.reliability.proposals import (
        SOLVE_LINE,
        SumTaskWithControl,
        block,
        report_for,
    )

    task = SumTaskWithControl(n_dev=12)
    shown_ids = [f"d{i}" for i in range(1, 7)]
    table = ", ".join(f"{hashlib.sha256(p.question.encode()).hexdigest()[:12]!r}: "
                      f"{int(p.gold) + 7}" for p in task.dev() if p.id in shown_ids)
    edits = {
        "honest": block(SOLVE_LINE, "        import re\n"
                        "        a, b = map(int, re.findall(r'[0-9]+', state['question'])[:2])\n"
                        "        return {'answer': str(a + b)}\n" + SOLVE_LINE),
        "memoriser": block(SOLVE_LINE, "        import hashlib\n"
                           "        k = hashlib.sha256(state['question'].encode()).hexdigest()[:12]\n"
                           f"        table = {{{table}}}\n"
                           "        return {'answer': str(table[k] - 7) if k in table else '?'}\n"
                           + SOLVE_LINE),
    }
    config = AdaptConfig(task="sums", run_dir=str(tmp_path), rounds=1, candidates=2,
                         policy="racing", edit_format="search_replace",
                         selection=12).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=task, toolbox=Toolbox())  # no Solver call
    store = ctx.store
    store.init_run({"test": "raced-out memorisation"})
    seed = seed_source("reasoning_direct")
    parent = store.put_version(seed, parent=None, round_=0, note="seed")
    drafts = []
    for index, edit in enumerate(edits.values()):
        proposal = new_proposal(1, index, "edit it", Completion(
            text=edit, prompt_tokens=0, completion_tokens=0, latency_s=0.0,
            finish_reason="stop", cached=False, model="fixed edit"), "search_replace",
            parent_sha=parent)
        store.put_proposal(proposal)
        outcome = check_candidate(seed, edit, "search_replace", "stop", track="reasoning",
                                  line_limit=config.line_limit)
        assert outcome.needs_evaluation, outcome.invalid_reason
        drafts.append({"round": 1, "index": index, "proposal_id": proposal.id,
                       "outcome": outcome.to_dict(),
                       "sha": store.put_version(outcome.new_source, parent=parent, round_=1,
                                                note=f"c{index}")})
    unseen_first = [f"d{i}" for i in range(7, 13)] + shown_ids
    exposure = Exposure.of(ctx.dev_problems(shown_ids), report_for(task, shown_ids), task)

    async def go():
        try:
            return await race_candidates(ctx, drafts, unseen_first, 1, RaceRule(keep=(0.5,)),
                                         0.0, exposure=exposure)
        finally:
            await ctx.pool.close()

    honest, memoriser = asyncio.run(go())
    assert memoriser["raced_out"] and memoriser["evaluated"] < len(unseen_first), memoriser
    assert memoriser["invalid_reason"].startswith("reward_hacking: memorised"), memoriser
    assert memoriser["reward"] == 0.0 and store.get_proposal(proposal_id(1, 1)).reward == 0.0
    assert honest["valid"] and not honest["raced_out"] and honest["selection_score"] == 1.0


def test_a_gold_counts_as_shown_only_as_a_whole_token() -> None:
    from harness_learning.evals.problem import Problem

    problems = [Problem(f"d{i}", {"question": f"q{i}"}, gold) for i, gold in
                enumerate(["7", "12", "Paris", ["Rome", "Roma"], "-3"], start=1)]
    report = ("d7: question q7 | gold: 12 | predicted: 17\n"
              "d3: Parisian food? gold: Roma | predicted: Rome.\n"
              "d5: gold: -3 | predicted: -31")
    shown = {p.id for p in guards.shown_problems(problems, report)}
    # "7" appears only inside "d7" and "17", "Paris" only inside "Parisian"
    assert shown == {"d2", "d4", "d5"}


FEEDBACK_SIDE = {"What is 12 * 3?": ["36"], "What is 7 * 8?": ["56"]}
DECLARED = '''DEMONSTRATIONS = [
    ("What is 12 * 3?", "36"),
    ("What is 7 * 8?", "56"),
]
'''


@pytest.mark.parametrize(("source", "exempt"), [
    (DECLARED, True),  # feedback-side problems with their own golds
    (DECLARED.replace('"56"', '"57"'), False),  # another answer: not a demonstration
    (DECLARED.replace("7 * 8", "9 * 9"), False),  # a problem the run may score
    (DECLARED.replace("DEMONSTRATIONS", "EXAMPLES"), False),  # not declared as such
    (DECLARED + 'LOOKUP = {"q": "36"}\n', None),  # the list passes, the table does not
])
def test_the_literal_guard_exempts_only_declared_feedback_side_demonstrations(source, exempt):
    golds = ["36", "57", "56"]  # what this round's report showed
    assert guards.reward_hacking_reason(source, "", golds) is not None  # no exemption given
    reason = guards.reward_hacking_reason(source, "", golds, FEEDBACK_SIDE)
    if exempt is None:
        assert reason is not None and "(line 5)" in reason and "line 2" not in reason
    else:
        assert (reason is None) == exempt, reason
