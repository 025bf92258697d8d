"""What a parsed completion says to do, independent of the source it will be applied to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

EditFormat = Literal["search_replace", "whole_program", "function"]
EDIT_FORMATS: tuple[str, ...] = EditFormat.__args__  # type: ignore[attr-defined]


def check_format(fmt: str) -> EditFormat:
    """A configuration mistake, not a model mistake: raise ValueError, not EditError."""
    if fmt not in EDIT_FORMATS:
        raise ValueError(f"unknown edit format {fmt!r}; known: {', '.join(EDIT_FORMATS)}")
    return fmt  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Block:
    """One SEARCH/REPLACE pair; `line` is where the block starts in the completion (1-based)."""

    search: str
    replace: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class Edit:
    """An ordered list of blocks, a whole program, or one function's new code (`program`
    holds the program or the function)."""

    fmt: EditFormat
    blocks: tuple[Block, ...] = ()
    program: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form stored in the execution log."""
        if self.fmt in ("whole_program", "function"):
            return {"fmt": self.fmt, "program": self.program}
        return {
            "fmt": self.fmt,
            "blocks": [{"search": b.search, "replace": b.replace, "line": b.line} for b in self.blocks],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Edit:
        fmt = check_format(d["fmt"])
        if fmt in ("whole_program", "function"):
            return cls(fmt, program=d["program"])
        blocks = tuple(Block(b["search"], b["replace"], int(b.get("line", 0))) for b in d["blocks"])
        return cls(fmt, blocks=blocks)


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR become LF, as Python itself reads source files."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
