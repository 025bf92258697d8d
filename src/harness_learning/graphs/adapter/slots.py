"""A round's candidate slots, typed and planned once (`plan_slots`): which Proposer fills each
proposal index of the round (the LLM Proposer's samples, the merge, an operator, an experience
library entry), with which operator or entry, and whether the policy is offered it. The
numbering is the log's (`proposal_id`), so it never changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.experience import EXPERIENCE_PREFIX

PROPOSER = "proposer"
MERGE = "merge"
OPERATOR = "operator"
EXPERIENCE = "experience"
"""The kinds of slot, by the Proposer that fills it (`Slot.origin`)."""


@dataclass(frozen=True)
class Slot:
    """One candidate's place in a round, planned before anything is proposed (`plan_slots`):
    which Proposer fills it, with which operator or library entry, and whether the policy is
    offered it. Its `index` names its proposal in the log (`proposal_id`) and seeds its
    sample."""

    index: int
    origin: str
    """PROPOSER, OPERATOR, MERGE or EXPERIENCE: the Proposer that fills the slot."""
    name: str | None = None
    """The operator's name, or the experience library entry's id."""
    training_only: bool = False
    """A GRPO group's extra sample (`AdaptConfig.group_size`): judged and logged like a
    candidate, never offered to the policy, evaluated in full even when racing."""

    @property
    def arm(self) -> str | None:
        """The round plan's name for the slot: an operator's name or `experience:ID`."""
        if self.origin == EXPERIENCE:
            return f"{EXPERIENCE_PREFIX}{self.name}"
        return self.name if self.origin == OPERATOR else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Slot:
        return cls(**data)


def arm_slot(index: int, arm: str) -> Slot:
    """The slot of an operator plan's arm (an operator's name or `experience:ID`)."""
    if arm.startswith(EXPERIENCE_PREFIX):
        return Slot(index, EXPERIENCE, arm[len(EXPERIENCE_PREFIX):])
    return Slot(index, OPERATOR, arm)


def plan_slots(cfg: AdaptConfig, plan: Sequence[str]) -> tuple[Slot, ...]:
    """A round's slots in proposal order: the Proposer's samples (the first `candidates` are
    offered to the policy, the rest of a GRPO group are training-only), the merge's when
    `merge` is on, then one for each arm of the round's operator `plan`
    (`experience_search.operator_plan`). The numbering is the log's: it never changes."""
    n, offered = cfg.samples_per_round, cfg.candidates or 1
    slots = [Slot(i, PROPOSER, training_only=i >= offered) for i in range(n)]
    if cfg.merge:
        slots.append(Slot(n, MERGE))
    return (*slots, *(arm_slot(n + 1 + j, arm) for j, arm in enumerate(plan)))


def round_slots(cfg: AdaptConfig, state: Mapping[str, Any]) -> tuple[Slot, ...]:
    """The slots `evaluate_current` planned for the state's round (a checkpoint written before
    slots were kept holds only the plan: they are planned from it, as they were then)."""
    kept = state.get("slots")
    if kept:
        return tuple(Slot.from_dict(s) for s in kept)
    return plan_slots(cfg, state.get("operator_plan") or [])


def slot_of(cfg: AdaptConfig, payload: Mapping[str, Any]) -> Slot:
    """The slot a `candidate` payload was sent for. A payload without one (sent before slots
    were kept, or by a caller judging a completion at an index of its own) is an operator
    plan's arm when it names one (`operator`), else the Proposer's planned sample at its
    index, else a Proposer sample offered to the policy."""
    if payload.get("slot"):
        return Slot.from_dict(payload["slot"])
    index, arm = payload["index"], payload.get("operator")
    if arm:
        return arm_slot(index, str(arm))
    planned = {s.index: s for s in plan_slots(cfg, ()) if s.origin == PROPOSER}
    return planned.get(index, Slot(index, PROPOSER))
