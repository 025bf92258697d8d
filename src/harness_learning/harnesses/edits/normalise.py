"""When two harness sources are the same program: equal up to comments and layout.

A small Proposer often repeats a change it already made in other whitespace, or with a comment
added; judged again, the repeat costs a selection evaluation and teaches nothing. The adapter
refuses a candidate whose normalised source equals a version the run already judged
(`graphs.adapter.run_memory`), so "the same" has to be one definition: the syntax tree. Docstrings
and string literals stay part of it (a prompt string *is* the program's behaviour).
"""

from __future__ import annotations

import ast
import hashlib


def normalised_source(source: str) -> str:
    """`source` with comments, blank lines, indentation width and line breaks inside brackets
    taken out: the dump of its syntax tree (no positions). A source that does not parse is
    compared line by line with outer whitespace and blank lines dropped."""
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
        return "\n".join(line.strip() for line in source.splitlines() if line.strip())


def normalised_sha(source: str) -> str:
    """The content address of `normalised_source(source)`: equal for sources that are one
    program."""
    text = normalised_source(source)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
