"""Each candidate's outcome as one word, and a round's candidates counted by outcome (the
display side of `evals.judge`'s invalid kinds).

Read from the judge's `invalid_kind` (an edit error such as `unmatched_search`, a runtime check
such as `no_build_graph`), never from its reason text, so the round table and the live view say
why candidates failed, not only that they did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any


def outcome(candidate: dict[str, Any]) -> str:
    """`valid`, `pending` (waiting for the race), or why the candidate was refused."""
    if candidate.get("valid"):
        return "raced_out" if candidate.get("raced_out") else "valid"
    if candidate.get("pending"):
        return "pending"
    return str(candidate.get("invalid_kind") or "invalid")


def count_outcomes(candidates: Iterable[dict[str, Any]]) -> Counter[str]:
    return Counter(outcome(c) for c in candidates)


def describe_counts(counts: Counter[str]) -> str:
    """'2 valid, 1 unmatched_search, 1 truncated': valid first, then the most frequent."""
    if not counts:
        return "none"
    order = sorted(counts, key=lambda k: (k != "valid", -counts[k], k))
    return ", ".join(f"{counts[k]} {k}" for k in order)
