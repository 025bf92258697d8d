"""Groups, filters and datasets built from logged proposals."""

import json

import pytest

from harness_learning.training.config import DataConfig
from harness_learning.training.data import (
    LogError,
    Proposal,
    _proposal,
    as_messages,
    filter_groups,
    group_proposals,
    grpo_rows,
    sft_rows,
)


def _p(pid, group, completion, reward, **kw):
    return Proposal(id=pid, run="run-a", group_id=group, prompt=f"prompt {group}",
                    completion=completion, reward=reward, valid=kw.pop("valid", True), **kw)


def test_groups_merge_across_runs_and_fold_duplicates():
    props = [_p("1", "g", "edit A", 0.2), _p("2", "g", "edit A ", 0.4), _p("3", "g", "B", 0.0)]
    groups = group_proposals(props)
    kept, report = filter_groups(groups, DataConfig(min_group_size=2))
    assert report.duplicates_folded == 1
    assert [p.completion for p in kept[0].proposals] == ["edit A", "B"]
    assert kept[0].proposals[0].reward == pytest.approx(0.3)
    assert kept[0].proposals[0].folded == 2


def test_small_and_flat_groups_are_dropped():
    props = [_p("1", "small", "x", 0.5),
             _p("2", "flat", "x", 0.1), _p("3", "flat", "y", 0.1),
             _p("4", "ok", "x", 0.1), _p("5", "ok", "y", 0.9)]
    kept, report = filter_groups(group_proposals(props), DataConfig(min_group_size=2))
    assert [g.group_id for g in kept] == ["ok"]
    assert (report.dropped_small, report.dropped_flat, report.groups_kept) == (1, 1, 1)
    kept, _ = filter_groups(group_proposals(props),
                            DataConfig(min_group_size=1, drop_flat_groups=False))
    assert len(kept) == 3


@pytest.mark.parametrize("scale", [False, True])
def test_rows_carry_group_relative_advantages(scale):
    props = [_p("1", "g", "a", 0.0), _p("2", "g", "b", 0.3), _p("3", "g", "c", 0.9)]
    rows = grpo_rows(group_proposals(props), scale_by_std=scale)
    advs = [r["advantage"] for r in rows]
    assert sum(advs) == pytest.approx(0.0, abs=1e-9)
    assert advs[0] < advs[1] < advs[2]
    assert (advs[2] - advs[0] == pytest.approx(0.9)) != scale  # std scaling changes the spread
    assert rows[0]["prompt"] == [{"role": "user", "content": "prompt g"}]


def test_sft_keeps_valid_edits_scored_above_parent_once():
    props = [
        _p("1", "g", "better", 0.8, selection_score=0.7, parent_score=0.5),
        _p("2", "g", "better", 0.8, selection_score=0.7, parent_score=0.5),
        _p("3", "g", "worse", 0.4, selection_score=0.3, parent_score=0.5),
        _p("4", "g", "same", 0.6, selection_score=0.5, parent_score=0.5),
        _p("5", "g", "broken", 0.0, valid=False, selection_score=0.9, parent_score=0.5),
    ]
    rows = sft_rows(props)
    assert [r["proposal_id"] for r in rows] == ["1"]
    assert rows[0]["completion"] == [{"role": "assistant", "content": "better"}]
    assert rows[0]["gain"] == pytest.approx(0.2)
    assert [r["proposal_id"] for r in sft_rows(props, ties=True)] == ["1", "4"]


def test_chat_prompts_are_kept_as_messages():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert as_messages(json.dumps(msgs)) == msgs
    assert as_messages(msgs) == msgs
    assert as_messages("[not json") == [{"role": "user", "content": "[not json"}]


@pytest.mark.parametrize("reward", [-0.1, float("nan"), "0.5"])
def test_bad_reward_names_run_and_record(reward):
    rec = {"id": 7, "group_id": "g", "prompt": "p", "completion": "c", "reward": reward}
    with pytest.raises(LogError, match=r"runs/x/log.sqlite: proposal 7"):
        _proposal(rec, "runs/x")


def test_unjudged_proposal_is_skipped_not_an_error():
    rec = {"id": 7, "group_id": "g", "prompt": "p", "completion": "c", "reward": None}
    assert _proposal(rec, "runs/x") is None


def test_logged_logprobs_accept_openai_layout():
    rec = {"id": 1, "group_id": "g", "prompt": "p", "completion": "c", "reward": 0.1,
           "logprobs": json.dumps({"content": [{"token": "a", "logprob": -0.5}]})}
    assert _proposal(rec, "r").logprobs == [-0.5]
    rec["logprobs"] = json.dumps([0.3])
    with pytest.raises(LogError, match="log-probs"):
        _proposal(rec, "r")


def test_rows_from_a_log_hold_only_text_a_dataset_file_can_write():
    # a logged JSON prompt (ASCII, so `\ud800` stays an escape) decodes to a lone surrogate
    prompt = json.dumps([{"role": "user", "content": "report: answer 'x\ud800'"}])
    rec = {"id": 1, "group_id": "g", "prompt": prompt, "completion": "edit \ud800\x1b[2K",
           "reward": 0.5, "valid": True, "selection_score": 0.9, "parent_score": 0.1,
           "logprobs": json.dumps([{"token": "\udc80", "logprob": -0.1}])}
    p = _proposal(rec, "runs/x")
    other = _p("2", "g", "other", 0.1)
    other.prompt = prompt
    rows = sft_rows([p]) + grpo_rows(group_proposals([p, other]))
    assert rows[0]["prompt"] == [{"role": "user", "content": "report: answer 'x\ufffd'"}]
    assert rows[0]["completion"][0]["content"] == "edit \ufffd\x1b[2K"  # what the model wrote
    assert rows[1]["old_tokens"] == ["\ufffd"]
    json.dumps(rows, ensure_ascii=False).encode("utf-8")
    from datasets import Dataset

    assert len(Dataset.from_list(rows[1:])) == 2
