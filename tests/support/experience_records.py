"""Experience-library records for tests: one judged outcome and one operator entry, with the
defaults the library's tests and its backend conformance suite share."""

from __future__ import annotations

from harness_learning.harnesses.experience import Entry, Outcome, Signature
from harness_learning.harnesses.experience.entry import operator_id


def outcome(run="r1", round_=1, candidate=0, task="rg:products", **kw) -> Outcome:
    kw.setdefault("parent_score", 0.5)
    kw.setdefault("score", 0.6)
    return Outcome(run, round_, candidate, task, "multiply numbers",
                   Signature((("wrong_answer", 3),), ("arithmetic slips",), ("off by one",)),
                   **kw)


def entry(outcomes, name="plan") -> Entry:
    return Entry(operator_id(name), "operator", f"operator:{name}", f"block {name}",
                 operator=name, outcomes=tuple(outcomes))
