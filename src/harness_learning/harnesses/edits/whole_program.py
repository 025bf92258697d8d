"""Whole-program edits: the completion holds the complete new harness in a fenced code block.

Fences follow CommonMark: an opening line of three or more backticks (or tildes) with an optional
info string, closed by a line of at least as many of the same character and nothing else. Blocks
tagged `python`/`py` or untagged are candidates. Choice when there are several: the one block that
defines `build_graph` wins (others are usually usage examples); two defining it, or several with
none defining it, is `multiple_programs`. Known limit: a program line that is exactly ``` ends the
block early; validation then reports the syntax error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness_learning.harnesses.edits.edit import Edit, normalize_newlines
from harness_learning.harnesses.edits.errors import EditError

OPEN_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
BUILD_GRAPH_RE = re.compile(r"^(?:async[ \t]+)?def[ \t]+build_graph[ \t]*\(", re.MULTILINE)
PYTHON_TAGS = {"", "python", "py", "python3"}


@dataclass
class Fenced:
    line: int
    info: str
    indent: int
    fence: str
    body: list[str] = field(default_factory=list)
    closed: bool = False


def _closes(line: str, block: Fenced) -> bool:
    s = line.strip(" \t")
    ch = block.fence[0]
    return len(s) >= len(block.fence) and s == ch * len(s) and len(line) - len(line.lstrip(" ")) <= 3


def fenced_blocks(text: str) -> list[Fenced]:
    """Every top-level fenced block, closed or not (an unclosed one runs to the end)."""
    blocks: list[Fenced] = []
    current: Fenced | None = None
    for no, line in enumerate(normalize_newlines(text).split("\n"), 1):
        if current is None:
            m = OPEN_RE.match(line)
            if m:
                info = m.group("info").strip().split(maxsplit=1)
                current = Fenced(no, info[0].lower() if info else "", len(m.group("indent")), m.group("fence"))
        elif _closes(line, current):
            current.closed = True
            blocks.append(current)
            current = None
        else:
            cut = min(current.indent, len(line) - len(line.lstrip(" ")))
            current.body.append(line[cut:])
    if current is not None:
        blocks.append(current)
    return blocks


def parse_program(completion: str) -> Edit:
    candidates = [b for b in fenced_blocks(completion) if b.info in PYTHON_TAGS]
    if not candidates:
        raise EditError("no_edit_found", "no ```python fenced block holding the program")
    unclosed = [b for b in candidates if not b.closed]
    if unclosed:
        raise EditError("malformed_block", f"the code fence opened at line {unclosed[0].line} is never closed")
    programs = ["\n".join(b.body) for b in candidates]
    defining = [i for i, p in enumerate(programs) if BUILD_GRAPH_RE.search(p)]
    if len(defining) > 1:
        lines = ", ".join(str(candidates[i].line) for i in defining)
        raise EditError("multiple_programs", f"{len(defining)} code blocks define build_graph (lines {lines})")
    if not defining and len(programs) > 1:
        raise EditError(
            "multiple_programs", f"{len(programs)} code blocks and none defines build_graph"
        )
    program = programs[defining[0] if defining else 0]
    if not program.strip():
        raise EditError("empty_result", f"the code block at line {candidates[0].line} is empty")
    return Edit("whole_program", program=program.rstrip("\n") + "\n")
