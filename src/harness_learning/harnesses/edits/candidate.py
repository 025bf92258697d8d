"""The one entry point from a Proposer completion to a candidate source."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from harness_learning.harnesses.edits.edit import Edit, check_format, normalize_newlines
from harness_learning.harnesses.edits.errors import EditError
from harness_learning.harnesses.edits.function_edit import apply_function, parse_function
from harness_learning.harnesses.edits.search_replace import apply_blocks, parse_blocks
from harness_learning.harnesses.edits.whole_program import parse_program

TRUNCATED_REASONS = frozenset({"length"})
"""finish_reason values meaning the model was cut off: such a completion is never adopted."""


def parse_edit(completion: str, fmt: str) -> Edit:
    """Read the edit out of a completion, or raise EditError."""
    fmt = check_format(fmt)
    if fmt == "search_replace":
        return parse_blocks(completion)
    if fmt == "function":
        return Edit("function", program=parse_function(completion))
    return parse_program(completion)


def apply_edit(source: str, edit: Edit) -> str:
    """The new source, or EditError. Newlines in the result are LF."""
    if edit.fmt == "whole_program":
        new = normalize_newlines(edit.program or "")
    elif edit.fmt == "function":
        new = apply_function(source, edit.program or "")
    else:
        new = apply_blocks(source, edit)
    if not new.strip():
        raise EditError("empty_result", "the edit leaves an empty program")
    return new


def unified_diff(old: str, new: str, name: str = "harness.py", context: int = 3) -> str:
    """A unified diff for people (reports, Studio, logs)."""
    a = normalize_newlines(old).splitlines(keepends=True)
    b = normalize_newlines(new).splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, f"a/{name}", f"b/{name}", n=context)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class CandidateEdit:
    """What became of one completion. `parsed`/`applied` feed the validity reward."""

    parsed: bool
    applied: bool
    new_source: str | None
    failure: EditError | None
    diff: str
    edit: Edit | None = None

    @property
    def unchanged(self) -> bool:
        """Applied, but the source is the same: nothing new to evaluate."""
        return self.applied and self.diff == ""


def parse_and_apply(
    source: str, completion: str, fmt: str, finish_reason: str | None = None
) -> CandidateEdit:
    """Parse one completion and apply it to `source` (nothing is checked or evaluated here:
    that is the judge's). Model mistakes come back as `failure`, never raised."""
    check_format(fmt)
    if finish_reason in TRUNCATED_REASONS:
        failure = EditError("truncated", f"the completion was cut off (finish_reason={finish_reason!r})")
        return CandidateEdit(False, False, None, failure, "")
    try:
        edit = parse_edit(completion, fmt)
    except EditError as e:
        return CandidateEdit(False, False, None, e, "")
    try:
        new = apply_edit(source, edit)
    except EditError as e:
        return CandidateEdit(True, False, None, e, "", edit)
    return CandidateEdit(True, True, new, None, unified_diff(source, new), edit)
