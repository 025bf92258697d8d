"""Rewards against hand-computed cases (docs/ARCHITECTURE.md, "Rewards")."""

from __future__ import annotations

import math

import pytest

from harness_learning.evals.rewards import (
    RewardInputs,
    group_advantages,
    program_facts,
    proposal_reward,
    qa_reward,
    reasoning_reward,
)

PROGRAM = "def build_graph(tools):\n    return None\n"


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        (RewardInputs(), 0.0),  # nothing parsed
        (RewardInputs(parsed=True), 0.05),  # parsed, did not apply
        (RewardInputs(selection_score=0.9, parsed=True), 0.05),  # a score without a candidate is ignored
        (RewardInputs(parsed=True, applied=True), 0.15),  # applied, no run completed
        (RewardInputs(parsed=True, applied=True, completed_fraction=0.4), 0.21),  # 0.15 + 0.06
        (RewardInputs(selection_score=0.48, parsed=True, applied=True, completed_fraction=1.0), 0.78),
        (RewardInputs(selection_score=1.0, parsed=True, applied=True, completed_fraction=1.0), 1.30),
    ],
)
def test_reasoning_reward(inputs, expected):
    reward, parts = reasoning_reward(inputs)
    assert reward == pytest.approx(expected)
    assert parts["reward"] == reward
    assert sum(parts[k] for k in ("task_score", "parse_bonus", "apply_bonus", "completion_bonus")) == pytest.approx(reward)


VALID_QA = dict(parsed=True, applied=True, syntax_ok=True, defines_build_graph=True, line_count=120,
                completed_fraction=1.0)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, 0.35 + 0.10),
        ({"line_count": 200}, 0.45),  # the limit itself is allowed
        ({"line_count": 201}, 0.0),
        ({"defines_build_graph": False}, 0.0),
        ({"syntax_ok": False}, 0.0),
        ({"completed_fraction": 0.95}, 0.0),  # did not complete the evaluation
        ({"applied": False}, 0.0),
    ],
)
def test_qa_reward_is_all_or_nothing(change, expected):
    reward, parts = qa_reward(RewardInputs(selection_score=0.35, **{**VALID_QA, **change}))
    assert reward == pytest.approx(expected)
    assert parts["valid"] is (expected > 0)


def test_qa_valid_program_with_zero_score_still_gets_the_bonus():
    assert qa_reward(RewardInputs(selection_score=0.0, **VALID_QA))[0] == pytest.approx(0.10)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_out_of_range_scores_are_refused(bad):
    with pytest.raises(ValueError, match="selection_score"):
        reasoning_reward(RewardInputs(selection_score=bad, parsed=True, applied=True))


def test_applied_without_parsed_is_inconsistent():
    with pytest.raises(ValueError, match="cannot apply without parsing"):
        reasoning_reward(RewardInputs(applied=True))


def test_proposal_reward_reads_the_program_itself():
    qa = dict(track="qa", parsed=True, applied=True, valid=True, completed_fraction=1.0, score=0.5)
    assert proposal_reward(**qa, source=PROGRAM)[0] == pytest.approx(0.6)
    assert proposal_reward(**qa, source="def build(tools):\n    pass\n")[0] == 0.0
    assert proposal_reward(**qa, source=PROGRAM + "x = 1\n" * 199)[0] == 0.0  # 201 lines
    assert proposal_reward(**{**qa, "valid": False}, source=PROGRAM)[0] == 0.0
    assert proposal_reward(**{**qa, "track": "reasoning"}, source=PROGRAM)[0] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="no reward for track"):
        proposal_reward(**{**qa, "track": "chess"}, source=PROGRAM)


def test_program_facts():
    assert program_facts(PROGRAM) == (True, True, 2)
    assert program_facts("def build_graph(:\n") == (False, False, 1)
    assert program_facts("class A:\n    def build_graph(self): ...\n") == (True, False, 2)
    assert program_facts(None) == (False, False, 0)


def test_group_advantages_centre_on_the_group_mean():
    assert group_advantages([0.1, 0.3, 0.8]) == pytest.approx([-0.3, -0.1, 0.4])
    assert group_advantages([]) == [] and group_advantages([0.7]) == [0.0]


def test_group_advantages_scaled_by_sample_std():
    # mean 0.5, sample std sqrt(((-.5)^2 + .5^2) / 1) = 0.7071
    assert group_advantages([0.0, 1.0], scale_by_std=True) == pytest.approx([-0.70701, 0.70701], rel=1e-4)
    assert group_advantages([0.4, 0.4, 0.4], scale_by_std=True) == pytest.approx([0.0] * 3, abs=1e-9)  # eps, no NaN
    with pytest.raises(ValueError):
        group_advantages([0.1, math.nan])
