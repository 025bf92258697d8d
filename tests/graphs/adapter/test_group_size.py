"""`AdaptConfig.group_size`: a round samples a whole GRPO group from one prompt whatever the
policy; only the first `candidates` compete for adoption, the others are judged and logged.
Scripted models (control flow); the real-model run is in tests/training/test_real_logprobs.py."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from scripted_sums import SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.estimate import estimate_budget
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.llm.completion import LOGPROB_PARAMS
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import proposal_id


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


EDITS = [  # as in test_policies_e2e: reward 0, 0.05, 0.15, 0.30, 1.30 by the paper's rules
    "The harness looks fine to me.",
    block("    this line is not in the source", "    pass"),
    block("        reply = tools.llm([*EXAMPLE, ask])", "        raise RuntimeError(\"boom\")"),
    block("        return {\"answer\": answer}",
          "        tools.llm(\"think again\")\n        return {\"answer\": \"nothing\"}"),
    block('PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line',
          'PROMPT = """Solve the problem CAREFULLY. Think briefly, then give the final answer on the last line'),
]


def run(root, scripted, *, group_size, logprobs=True, policy="strict", candidates=1):
    seen: list[dict] = []

    def proposer_rule(prompt: str, params: dict) -> str:
        seen.append(dict(params))
        return EDITS[params["seed"] % 1009]

    config = AdaptConfig(task="sums", run_dir=str(root / f"g{group_size}-{logprobs}-{policy}"),
                         rounds=1, candidates=candidates, group_size=group_size, policy=policy,
                         proposer_logprobs=logprobs, edit_format="search_replace", feedback=6,
                         selection=6, concurrency=6).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(6, test_offset=1),
                                     solver=scripted(solver_rule), proposer=scripted(proposer_rule))
    final = asyncio.run(run_adaptation(config, context=ctx))  # closes ctx: reopen the log
    return final, SimpleNamespace(config=config, store=RunDir(config.run_dir).open_store()), seen


@pytest.fixture(scope="module")
def strict5(tmp_path_factory, scripted):
    return run(tmp_path_factory.mktemp("runs"), scripted, group_size=5)


def test_strict_track_logs_a_group_of_five_but_adopts_only_from_its_candidate(strict5):
    final, ctx, _ = strict5
    (round1,) = final["rounds"]
    # The policy saw candidate 0 only (unparseable), so the better edit (sample 4) is logged
    # but not adopted, and the decision's scores name candidate 0 alone.
    assert [c["index"] for c in round1["candidates"]] == [0]
    assert not round1["adopted"] and final["current_sha"] == round1["current_sha"]
    (decision,) = list(ctx.store.iter_decisions())
    assert list(decision.scores["candidates"]) == ["0"]  # JSON keys
    proposals = {p.id: p for p in ctx.store.iter_proposals()}
    assert sorted(proposals) == [f"r1-c{i}" for i in range(5)]
    assert len({p.group_id for p in proposals.values()}) == 1
    # Every sample was judged by the paper's rules, training-only ones included.
    assert [proposals[f"r1-c{i}"].reward for i in range(5)] == pytest.approx(
        [0.0, 0.05, 0.15, 0.30, 1.30])
    assert proposals["r1-c4"].valid and proposals["r1-c4"].selection_score == 1.0


def test_the_group_becomes_training_data(strict5):
    from harness_learning.training.config import DataConfig
    from harness_learning.training.data import load_groups

    _, ctx, _ = strict5
    groups, report = load_groups([ctx.config.run_dir], DataConfig())
    assert report.groups_kept == 1 and len(groups[0].proposals) == 5


def test_logprobs_are_requested_unless_turned_off(strict5, tmp_path, scripted):
    *_, seen = strict5
    assert all(p["logprobs"] is True and p["top_logprobs"] == 1 for p in seen)
    *_, off = run(tmp_path, scripted, group_size=None, logprobs=False)
    assert len(off) == 1 and not LOGPROB_PARAMS.keys() & off[0].keys()


def test_racing_races_its_candidates_and_evaluates_the_training_sample_in_full(tmp_path,
                                                                             scripted):
    final, ctx, _ = run(tmp_path, scripted, group_size=5, policy="racing", candidates=4)
    (round1,) = final["rounds"]
    assert [c["index"] for c in round1["candidates"]] == [0, 1, 2, 3]
    assert round1["candidates"][3]["raced_out"]  # the race judged 2 and 3 on part of the set
    better = ctx.store.get_proposal(proposal_id(1, 4))  # training-only: all 6 selection problems, no race
    assert better.valid and better.selection_score == 1.0 and better.reward == pytest.approx(1.30)
    assert "raced_out" not in better.reward_parts
    assert len([e for e in ctx.store.iter_evaluations(sha=better.candidate_sha, purpose="selection",
                                                      round=1) if e.result.completed]) == 6
    assert final["current_sha"] != better.candidate_sha


def test_estimate_counts_the_training_samples():
    base = dict(task="sums", run_dir="x", rounds=2, candidates=1, policy="strict",
                edit_format="search_replace", feedback=4, selection=5)
    one = estimate_budget(AdaptConfig(**base), seed_source_text="tools.llm(q)")
    five = estimate_budget(AdaptConfig(**base, group_size=5), seed_source_text="tools.llm(q)")
    assert (one.proposer_calls, five.proposer_calls) == (2, 10)
    repaired = estimate_budget(AdaptConfig(**base, repair_turns=1), seed_source_text="tools.llm(q)")
    assert repaired.proposer_calls == 2 * 2  # each sample may take its second chance
    assert five.solver_calls - one.solver_calls == 2 * 4 * 5  # 4 more samples x 5 problems
    ops = estimate_budget(AdaptConfig(**base, operators="auto", operators_per_round=2),
                          seed_source_text="tools.llm(q)")
    # round 1 tries interpreter (up to 3 + 1 calls a problem) and plan (1 + 1) on 5 problems;
    # round 2 may start from the interpreter's version (4 calls a problem: 9 problems and 5 for
    # its sample) and reach vote (5 x 4) and verify (3 x 4 + 3)
    assert ops.solver_calls - one.solver_calls == 5 * (4 + 2) + (9 + 5) * (4 - 1) + 5 * (20 + 15)
    assert ops.operators == 2
    assert "+ 2 operator candidates" in ops.describe()


def test_group_size_below_one_is_refused():
    with pytest.raises(ValueError, match="group_size must be at least 1"):
        AdaptConfig(task="sums", run_dir="x", group_size=0).with_track_defaults("reasoning")
