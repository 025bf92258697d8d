"""Help text as the terminal shows it: Typer renders help through rich, which takes a bare
`[word]` for a markup tag and drops it ("The config's  scale" for "The config's [smoke] scale")."""

from __future__ import annotations

import re

import typer
from typer.testing import CliRunner

from harness_learning.cli import app

UNESCAPED_TAG = re.compile(r"(?<!\\)\[[a-z][a-z_./-]*\]")


def _commands(group, path=()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))


def test_no_help_text_holds_a_bracketed_word_rich_would_swallow():
    root = typer.main.get_command(app)
    swallowed = {}
    for path, command in _commands(root):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        if bad := [t for t in texts if UNESCAPED_TAG.search(t)]:
            swallowed[" ".join(path)] = bad
    assert swallowed == {}


def test_an_escaped_bracket_reaches_the_terminal():
    result = CliRunner().invoke(app, ["experiment", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "The config's [smoke] scale" in result.output
