"""Text a harness produced is data wherever it goes: a terminal, rich, a store, a prompt.

A harness (or a model, a tool, a metric) chooses its answers, errors and traces. Printed as they
are, escape codes move the cursor, erase or conceal what a person reads, and rich markup such as
`[/]` raises; stored as they are, a lone surrogate (legal in a Python string, decoded from JSON's
`\\ud800`) fails every UTF-8 write; pasted into a prompt as they are, a multi-line message can
open a `## How to answer` section of its own. Each function here makes text safe for one place,
and nothing else about it changes. No import beyond the standard library at module level: the
sandbox's worker loads this module too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, erase, colours, conceal
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape, and a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the 8-bit CSI
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls but tab and newline (carriage return, backspace and form feed overwrite
what was printed), and the bidirectional overrides that reorder a line as it is shown."""
_LINE_BREAKS = re.compile("\r\n|[\r\u2028\u2029]")


def for_storage(text: object) -> str:
    """`text` as a string any UTF-8 writer takes (a file, SQLite, Arrow): each lone surrogate
    becomes U+FFFD. Everything else is kept as it was (PostgreSQL's refusal of NUL is its
    store's own to handle, `store.postgres`)."""
    text = text if isinstance(text, str) else str(text)
    return _SURROGATE.sub(REPLACEMENT, text)


def storable(value: object) -> Any:
    """`value` (JSON data: dicts, lists, strings, numbers) with every string in it, keys too,
    `for_storage`d. Containers are changed in place; walked without recursion, so nesting as
    deep as a JSON parser allows cannot overflow the stack here."""
    if isinstance(value, str):
        return for_storage(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            items = list(node.items())
            node.clear()
            node.update((for_storage(k) if isinstance(k, str) else k,
                         for_storage(v) if isinstance(v, str) else v) for k, v in items)
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = for_storage(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
    return value


def for_terminal(text: object, newlines: bool = True) -> str:
    """`text` as a terminal may show it: escape sequences and control characters removed
    (tab and newline kept, or made spaces when `newlines` is False), line breaks as newlines,
    lone surrogates replaced."""
    text = _LINE_BREAKS.sub("\n", for_storage(text))
    text = _CONTROL.sub("", _ESCAPE.sub("", text))
    return text if newlines else text.replace("\n", " ").replace("\t", " ")


def for_rich(text: object, newlines: bool = True) -> str:
    """`text` for a string that rich reads as markup (a table cell, `console.print`): safe for a
    terminal, with every `[` that could open a tag escaped, so it is shown as written."""
    from rich.markup import escape

    return escape(for_terminal(text, newlines))


def data_block(lines: Iterable[str], info: str = "") -> list[str]:
    """Harness-produced lines as one fenced block for a prompt that cannot open a section of
    its own: the fence is longer than any run of backticks inside, and a line that would start
    with `#` (a heading) starts with `\\#` instead. Control characters are removed and every
    line break is a line of the block."""
    body = for_terminal("\n".join(lines)).split("\n")
    body = [re.sub(r"^(\s*)#", r"\1\\#", line) for line in body]
    mark = fence("\n".join(body))
    return [mark + info, *body, mark]


def fence(text: str) -> str:
    """A Markdown fence `text` cannot close: longer than any run of backticks in it."""
    return "`" * max(3, max(map(len, re.findall(r"`+", text)), default=0) + 1)
