"""The adapter end to end with a scripted Solver and Proposer: one known-better edit among bad
ones (unparseable, non-applying, crashing, slower and worse); each policy must adopt what it
should. Harness code runs in real sandbox workers; only the models are scripted."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.rundir import RunDir


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


EDITS = [
    "The harness looks fine to me.",                                            # unparseable
    block("    this line is not in the source", "    pass"),                    # does not apply
    block("        reply = tools.llm([*EXAMPLE, ask])",
          "        raise RuntimeError(\"boom\")"),                               # crashes
    block("        return {\"answer\": answer}",
          "        tools.llm(\"think again\")\n        return {\"answer\": \"nothing\"}"),  # worse
    block('PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line',
          'PROMPT = """Solve the problem CAREFULLY. Think briefly, then give the final answer on the last line'),  # better
]


def proposer_rule(prompt: str, params: dict) -> str:
    return EDITS[params["seed"] % 1009]


def run(root, scripted, policy: str, candidates: int):
    config = AdaptConfig(task="sums", run_dir=str(root / f"{policy}-{candidates}"), rounds=1,
                         candidates=candidates, policy=policy, edit_format="search_replace",
                         feedback=6, selection=6, concurrency=6).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(6, test_offset=1),
                                     solver=scripted(solver_rule), proposer=scripted(proposer_rule))
    final = asyncio.run(run_adaptation(config, context=ctx))
    return final, RunDir(config.path).open_store()  # the run closed its own


@pytest.fixture(scope="module")
def runs(tmp_path_factory, scripted):
    """Each (policy, candidates) run once for the module: every run is a real adapter run."""
    root, done = tmp_path_factory.mktemp("runs"), {}

    def get(policy: str, candidates: int):
        if (policy, candidates) not in done:
            done[policy, candidates] = run(root, scripted, policy, candidates)
        return done[policy, candidates]

    return get


@pytest.mark.parametrize("policy", ["strict", "best_valid"])
def test_each_policy_adopts_the_better_edit(runs, policy):
    final, store = runs(policy, 5)
    (round1,) = final["rounds"]
    by_index = {c["index"]: c for c in round1["candidates"]}
    assert not by_index[0]["parsed"] and not by_index[0]["valid"]
    assert by_index[1]["parsed"] and not by_index[1]["applied"]
    assert "unmatched" in by_index[1]["invalid_reason"]
    assert by_index[2]["applied"] and not by_index[2]["valid"]
    assert "did not complete" in by_index[2]["invalid_reason"]
    assert by_index[3]["valid"] and by_index[3]["selection_score"] == 0.0
    assert by_index[4]["valid"] and by_index[4]["selection_score"] == 1.0
    assert round1["current_selection_score"] == pytest.approx(0.5)
    assert round1["adopted"] and final["current_sha"] == by_index[4]["sha"]
    assert "CAREFULLY" in store.get_version_source(final["current_sha"])


def test_strict_keeps_current_when_every_valid_edit_is_worse(runs):
    final, _ = runs("strict", 4)
    (round1,) = final["rounds"]
    assert not round1["adopted"]
    assert final["current_sha"] == round1["current_sha"]


def test_best_valid_adopts_the_best_valid_edit_even_if_worse(runs):
    final, _ = runs("best_valid", 4)
    (round1,) = final["rounds"]
    worse = next(c for c in round1["candidates"] if c["index"] == 3)
    assert round1["adopted"] and final["current_sha"] == worse["sha"]


def test_proposals_table_rewards_follow_the_papers_rules(runs):
    _, store = runs("strict", 5)
    rewards = {p.id: p.reward for p in store.iter_proposals()}
    assert rewards["r1-c0"] == 0.0                    # does not parse: no bonus at all
    assert rewards["r1-c1"] == pytest.approx(0.05)    # parses, does not apply
    assert rewards["r1-c2"] == pytest.approx(0.15)    # parses + applies, no run completes
    assert rewards["r1-c3"] == pytest.approx(0.30)    # valid, score 0, every run completes
    assert rewards["r1-c4"] == pytest.approx(1.30)    # valid, score 1, every run completes
