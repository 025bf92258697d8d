"""Edits a Proposer writes: SEARCH/REPLACE blocks or a whole program (docs/ARCHITECTURE.md,
"The judge's outcome"). `parse_and_apply` is the entry point; failures are `EditError`s with a named kind."""

from harness_learning.harnesses.edits.candidate import (
    CandidateEdit,
    apply_edit,
    parse_and_apply,
    parse_edit,
    unified_diff,
)
from harness_learning.harnesses.edits.edit import EDIT_FORMATS, Block, Edit, EditFormat
from harness_learning.harnesses.edits.errors import EDIT_ERROR_KINDS, EditError, EditErrorKind
from harness_learning.harnesses.edits.instructions import format_instructions

__all__ = [
    "EDIT_ERROR_KINDS",
    "EDIT_FORMATS",
    "Block",
    "CandidateEdit",
    "Edit",
    "EditError",
    "EditErrorKind",
    "EditFormat",
    "apply_edit",
    "format_instructions",
    "parse_edit",
    "parse_and_apply",
    "unified_diff",
]
