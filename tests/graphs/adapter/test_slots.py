"""A round's typed slots (`propose.plan_slots`): which Proposer fills each index, which are
training-only, and the slot a payload sent before slots were kept stands for."""

from __future__ import annotations

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.slots import (
    EXPERIENCE,
    MERGE,
    OPERATOR,
    PROPOSER,
    Slot,
    plan_slots,
    round_slots,
    slot_of,
)


def config(**kw) -> AdaptConfig:
    return AdaptConfig(task="sums", run_dir="x", **kw).with_track_defaults("reasoning")


def test_slots_name_the_proposer_of_each_index_in_the_logs_numbering():
    cfg = config(candidates=2, group_size=4, merge=True)
    slots = plan_slots(cfg, ["interpreter", "experience:" + "e" * 64])
    assert [(s.index, s.origin, s.name, s.training_only) for s in slots] == [
        (0, PROPOSER, None, False), (1, PROPOSER, None, False),
        (2, PROPOSER, None, True), (3, PROPOSER, None, True),  # the rest of the GRPO group
        (4, MERGE, None, False),
        (5, OPERATOR, "interpreter", False), (6, EXPERIENCE, "e" * 64, False)]
    assert [s.arm for s in slots[4:]] == [None, "interpreter", "experience:" + "e" * 64]
    without_merge = plan_slots(config(candidates=1), ["plan"])
    assert [(s.index, s.origin) for s in without_merge] == [(0, PROPOSER), (2, OPERATOR)]


def test_a_round_keeps_its_slots_and_an_older_state_plans_them_from_its_plan():
    cfg = config(candidates=1, group_size=2)
    kept = {"slots": [Slot(0, PROPOSER).to_dict(), Slot(7, OPERATOR, "vote").to_dict()],
            "operator_plan": ["plan"]}
    assert round_slots(cfg, kept) == (Slot(0, PROPOSER), Slot(7, OPERATOR, "vote"))
    assert round_slots(cfg, {"operator_plan": ["plan"]}) == (
        Slot(0, PROPOSER), Slot(1, PROPOSER, training_only=True), Slot(3, OPERATOR, "plan"))


def test_a_payload_names_its_slot_or_is_read_as_it_was_sent_before_slots():
    cfg = config(candidates=1, group_size=3)
    assert slot_of(cfg, {"index": 5, "slot": Slot(5, MERGE).to_dict()}) == Slot(5, MERGE)
    assert slot_of(cfg, {"index": 2}) == Slot(2, PROPOSER, training_only=True)
    assert slot_of(cfg, {"index": 9}) == Slot(9, PROPOSER)  # a caller's own index
    assert slot_of(cfg, {"index": 4, "operator": "vote"}) == Slot(4, OPERATOR, "vote")
    assert slot_of(cfg, {"index": 5, "operator": "experience:abc"}) == Slot(5, EXPERIENCE, "abc")
