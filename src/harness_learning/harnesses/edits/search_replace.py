"""SEARCH/REPLACE blocks: parse them out of a completion and apply them to a source.

Matching is line-based. Each block is applied, in order, to the result of the blocks before it.
A block first has to match exactly; failing that, a whitespace-tolerant match ignores trailing
whitespace, blank lines at the block's ends and a uniform indentation shift (the replacement is
re-indented by the same shift). No match, or several, is a named failure: guessing would adopt
code the Proposer did not mean.
"""

from __future__ import annotations

import difflib
import os
import re

from harness_learning.harnesses.edits.edit import Block, Edit, normalize_newlines
from harness_learning.harnesses.edits.errors import EditError

SEARCH_RE = re.compile(r"^[ \t]*<{5,9}[ \t]*SEARCH[ \t]*$")
DIVIDER_RE = re.compile(r"^[ \t]*={5,9}[ \t]*$")
REPLACE_RE = re.compile(r"^[ \t]*>{5,9}[ \t]*REPLACE[ \t]*$")


def to_text(lines: list[str]) -> str:
    """Lines -> text where every line ends in LF, so zero lines ("") differs from one blank ("\\n")."""
    return "".join(line + "\n" for line in lines)


def to_lines(text: str) -> list[str]:
    text = normalize_newlines(text)
    if not text:
        return []
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def parse_blocks(completion: str) -> Edit:
    """All blocks in a completion. Text outside blocks (prose, code fences) is ignored."""
    lines = normalize_newlines(completion).split("\n")
    blocks: list[Block] = []
    state, start, search, replace = "out", 0, [], []
    for no, line in enumerate(lines, 1):
        if state == "out":
            if SEARCH_RE.match(line):
                state, start, search, replace = "search", no, [], []
            elif REPLACE_RE.match(line):
                raise EditError("malformed_block", f"line {no}: REPLACE marker without a SEARCH marker")
        elif state == "search":
            if DIVIDER_RE.match(line):
                state = "replace"
            elif SEARCH_RE.match(line) or REPLACE_RE.match(line):
                raise EditError(
                    "malformed_block",
                    f"block at line {start}: line {no} has a marker before the ======= divider",
                )
            else:
                search.append(line)
        else:  # replace
            if REPLACE_RE.match(line):
                if not any(s.strip() for s in search):
                    raise EditError(
                        "malformed_block",
                        f"block at line {start}: SEARCH is empty; quote the lines to replace",
                    )
                blocks.append(Block(to_text(search), to_text(replace), start))
                state = "out"
            elif SEARCH_RE.match(line):
                raise EditError(
                    "malformed_block", f"block at line {start}: new SEARCH at line {no} before REPLACE"
                )
            else:
                replace.append(line)
    if state != "out":
        raise EditError("malformed_block", f"block at line {start} is not closed by >>>>>>> REPLACE")
    if not blocks:
        raise EditError("no_edit_found", "no <<<<<<< SEARCH / ======= / >>>>>>> REPLACE block")
    return Edit("search_replace", blocks=tuple(blocks))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _shape(lines: list[str]) -> tuple[str, tuple[str, ...]]:
    """(common indentation, lines without it and without trailing whitespace)."""
    stripped = [line.rstrip() for line in lines]
    nonblank = [_indent(line) for line in stripped if line]
    common = os.path.commonprefix(nonblank) if nonblank else ""
    return common, tuple(line[len(common) :] for line in stripped)


def _reindent(lines: list[str], old: str, new: str) -> list[str]:
    if old == new:
        return lines
    if new.startswith(old):
        add = new[len(old) :]
        return [add + line if line.strip() else line for line in lines]
    if old.startswith(new):
        cut = len(old) - len(new)
        return [line[min(cut, len(_indent(line))) :] for line in lines]
    return [new + line[len(old) :] if line.startswith(old) else line for line in lines]


def _trim_blank_ends(lines: list[str]) -> tuple[int, int]:
    lo, hi = 0, len(lines)
    while lo < hi and not lines[lo].strip():
        lo += 1
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    return lo, hi


def _exact(lines: list[str], search: list[str]) -> list[int]:
    n = len(search)
    first = search[0]
    return [i for i in range(len(lines) - n + 1) if lines[i] == first and lines[i : i + n] == search]


def _tolerant(lines: list[str], search: list[str]) -> tuple[list[int], str]:
    """Window starts whose shape equals the search's, and the search's own indentation."""
    s_ind, s_shape = _shape(search)
    n = len(search)
    first = s_shape[0]
    hits = [
        i
        for i in range(len(lines) - n + 1)
        if lines[i].strip() == first.strip() and _shape(lines[i : i + n])[1] == s_shape
    ]
    return hits, s_ind


def _unmatched(block: Block, index: int, lines: list[str]) -> EditError:
    search = to_lines(block.search)
    first = next((s.strip() for s in search if s.strip()), "")
    hint = ""
    if first and len(lines) <= 5000:
        close = difflib.get_close_matches(first, [x.strip() for x in lines], n=1, cutoff=0.6)
        if close:
            hint = f"; the closest source line is {close[0][:120]!r}"
    return EditError(
        "unmatched_search",
        f"block {index} (line {block.line}): its SEARCH lines are not in the source{hint}",
    )


def apply_block(lines: list[str], block: Block, index: int) -> list[str]:
    search, replace = to_lines(block.search), to_lines(block.replace)
    hits = _exact(lines, search) if search else []
    if len(hits) == 1:
        i = hits[0]
        return lines[:i] + replace + lines[i + len(search) :]
    if not hits:
        lo, hi = _trim_blank_ends(search)
        if lo < hi:
            r_lo, r_hi = _trim_blank_ends(replace)
            core = search[lo:hi]
            hits, s_ind = _tolerant(lines, core)
            if len(hits) == 1:
                i = hits[0]
                w_ind = _shape(lines[i : i + len(core)])[0]
                new = _reindent(replace[r_lo:r_hi], s_ind, w_ind)
                return lines[:i] + new + lines[i + len(core) :]
    if len(hits) > 1:
        where = ", ".join(str(i + 1) for i in hits[:8])
        raise EditError(
            "ambiguous_search",
            f"block {index} (line {block.line}) matches {len(hits)} places (source lines {where}); "
            "include more surrounding lines",
        )
    raise _unmatched(block, index, lines)


def apply_blocks(source: str, edit: Edit) -> str:
    text = normalize_newlines(source)
    lines = to_lines(text)
    for index, block in enumerate(edit.blocks, 1):
        lines = apply_block(lines, block, index)
    return to_text(lines)
