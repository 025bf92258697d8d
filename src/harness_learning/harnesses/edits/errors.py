"""Why a Proposer completion did not become a candidate: one exception with a named kind.

The kind is what the execution log records (`invalid_reason`) and what training counts, so kinds
are a closed set; `detail` is for people.
"""

from __future__ import annotations

from typing import Literal

EditErrorKind = Literal[
    "truncated",
    "no_edit_found",
    "malformed_block",
    "unmatched_search",
    "ambiguous_search",
    "multiple_programs",
    "empty_result",
    "unknown_function",
]
EDIT_ERROR_KINDS: tuple[str, ...] = EditErrorKind.__args__  # type: ignore[attr-defined]


class EditError(Exception):
    """A completion that cannot be turned into a new harness source."""

    def __init__(self, kind: EditErrorKind, detail: str) -> None:
        if kind not in EDIT_ERROR_KINDS:
            raise ValueError(f"unknown edit error kind {kind!r}; known: {EDIT_ERROR_KINDS}")
        super().__init__(f"{kind}: {detail}")
        self.kind: EditErrorKind = kind
        self.detail = detail

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "detail": self.detail}

    def __reduce__(self):  # keeps the two-argument constructor picklable across processes
        return (type(self), (self.kind, self.detail))
