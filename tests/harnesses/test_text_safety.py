"""`harnesses.text_safety`: text made safe for a terminal, rich, a store and a prompt, and the
bridge carrying a lone surrogate instead of failing its sender."""

from __future__ import annotations

import io
import json

from rich.console import Console

from harness_learning.harnesses.sandbox.protocol import decode, encode
from harness_learning.harnesses.text_safety import (
    data_block,
    fence,
    for_rich,
    for_storage,
    for_terminal,
    storable,
)

HOSTILE = ("[/]\x1b[1A\x1b[2K\x1b[8mhidden\ud800 [bold]x\r\x08\x07\x1b]0;title\x07"
           "\u202egnp.exe\x9b2J\tend\nnext")


def test_for_terminal_keeps_the_text_and_drops_what_a_terminal_would_obey():
    assert for_terminal(HOSTILE) == "[/]hidden\ufffd [bold]x\ngnp.exe\tend\nnext"
    assert for_terminal(HOSTILE, newlines=False) == "[/]hidden\ufffd [bold]x gnp.exe end next"
    assert for_terminal("plain: ü, 中文, emoji 😀") == "plain: ü, 中文, emoji 😀"
    assert for_terminal(None) == "None"


def test_for_rich_is_printed_as_written():
    console = Console(file=io.StringIO(), force_terminal=True, width=200, highlight=False)
    console.print(for_rich(HOSTILE, newlines=False))
    printed = console.file.getvalue()
    assert "[/]hidden\ufffd [bold]x" in printed and "\x1b[8m" not in printed
    assert for_rich("a\\") == "a\\\\"  # a trailing backslash cannot escape rich's next tag


def test_for_storage_replaces_only_lone_surrogates():
    assert for_storage("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    kept = "[/]\x1b[2K😀"
    assert for_storage(kept) == kept
    json.dumps(for_storage(HOSTILE), ensure_ascii=False).encode("utf-8")


def test_a_data_block_cannot_open_a_section_or_be_closed_early():
    block = data_block(["ok", "## How to answer", "   # also", "````", "a\u2028## split"])
    assert block[0] == block[-1] == "`````"
    assert block[1:-1] == ["ok", "\\## How to answer", "   \\# also", "````", "a", "\\## split"]
    assert fence("no ticks") == "```" and fence("x ``````` y") == "````````"


def test_the_bridge_carries_a_lone_surrogate_as_a_replacement():
    line = encode({"op": "result", "run": "r", "answer": "a\ud800b"})
    assert decode(line)["answer"] == "a\ufffdb"
    assert encode({"op": "x", "text": "ü😀"}).decode("utf-8").startswith('{"op": "x", "text": "ü😀"')


def test_a_line_written_with_surrogate_escapes_decodes_to_storable_text():
    line = (b'{"op": "result", "answer": "a\\ud800b", "x": {"\\udc00": ["\\ud83d\\ude00", 1]},'
            b' "ok": "\\u00fc"}')
    message = decode(line)
    assert message["answer"] == "a\ufffdb" and message["ok"] == "\u00fc"
    assert message["x"] == {"\ufffd": ["\U0001f600", 1]}  # a pair is one character, kept
    deep = json.loads("[" * 500 + '"\\ud800"' + "]" * 500)
    inner = storable(deep)
    for _ in range(500):
        inner = inner[0]
    assert inner == "\ufffd"


def test_a_model_reply_holds_no_lone_surrogate():
    from harness_learning.harnesses.llm.completion import Completion

    reply = Completion("x\ud800 [/]", 1, 2, 0.1, "stop", False, "m")
    assert reply.text == "x\ufffd [/]"
    assert Completion.from_dict(reply.to_dict()) == reply
