"""Every `harness-learn` command the README and docs/*.md show parses: its command exists and
the CLI's own parser accepts each flag and value (an `adapt` Literal such as `--edit-format
function` included), so a documented flag can never be refused again.

Commands are taken from code lines (`$H ...`, `harness-learn ...`, fenced or indented) and from
inline code in the prose. Placeholders are rewritten into real values, never skipped: `[--x V]`
becomes `--x V`, `a | b` alternatives each become a command, `RUN`/`N`/`URL`/... real values,
`adapt ...` the options every run needs (where missing), a trailing `...` after another command `--help`
(the command must exist), `...` elsewhere dropped (more of the same). Nothing runs: `make_context` parses and converts, no callback is
called. Fewer commands than `FLOOR` means the extraction broke, and fails too.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from harness_learning.cli import app
from harness_learning.cli.options import field_values
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.config_file import read_config_file
from harness_learning.harnesses.edits import EDIT_FORMATS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FLOOR = 92
"""Commands found on 2026-12-04; raise it when the docs gain commands."""

PLACEHOLDERS = {
    "RUN_DIR": "runs/legs", "RUN": "runs/legs", "N": "2", "REASON": "too slow",
    "URL": "postgresql://hl@127.0.0.1:5432/harness", "ADDRESS": "auto", "NAME:TAG": "hl:test",
    "CONFIG": "experiments/reasoning.toml", "JSON": '{"fractions": [0.5, 1], "keep": [0.5]}',
}
"""Upper-case words the docs use for a value, and a real value of the same kind."""
ADAPT_BASICS = ["--task", "rg:leg_counting", "--run-dir", "runs/legs"]
FRAGMENTS = {
    "harness-learn run --harness": "harness-learn run --harness RUN --task rg:leg_counting",
    "harness-learn run --harness RUN": "harness-learn run --harness RUN --task rg:leg_counting",
    "harness-learn bench grpo-step": "harness-learn bench grpo-step runs/ptrain/stages/collect/x",
    "harness-learn train export": "harness-learn train export ckpt/solver/checkpoint --out s.gguf",
}
"""Prose that names a command or a flag without the rest of a command line (the sentence is
about that part), made whole with real values so the part it names is still checked."""
_CODE_LINE = re.compile(r"^\s*(?:[A-Z_]+=\S+\s+)*(?:\$H|harness-learn)\s")
_INLINE = re.compile(r"`(harness-learn\s[^`]+)`")


def _code_commands(text: str) -> tuple[list[str], str]:
    """Command lines of code (joined over `\\` continuations), and the text without them."""
    commands, prose, lines = [], [], iter(text.splitlines())
    for line in lines:
        if not _CODE_LINE.match(line):
            prose.append(line)
            continue
        while line.rstrip().endswith("\\"):
            line = line.rstrip()[:-1] + " " + next(lines, "")
        commands.append(line)
    return commands, "\n".join(prose)


def documented_commands() -> list[tuple[str, str]]:
    """(where, command text) for every `harness-learn` command in the README and docs."""
    found = []
    for path in DOCS:
        code, prose = _code_commands(path.read_text(encoding="utf-8"))
        spans = [" ".join(m.group(1).split()) for m in _INLINE.finditer(prose)]
        for text in code + spans:
            for part in re.split(r";\s|\s&&\s", _without_comment(text)):
                found += [(path.name, c) for c in _alternatives(part.strip())]
    return found


def _without_comment(line: str) -> str:
    """The line up to a shell comment (a `#` outside quotes, after a space)."""
    quote = None
    for i, ch in enumerate(line):
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1] == " "):
            return line[:i].rstrip()
    return line


def _alternatives(command: str) -> list[str]:
    """`bench bm25 | round [--x] | reliability` -> one command per alternative."""
    parts = [p.strip() for p in command.split(" | ")]
    if len(parts) == 1:
        return parts
    prefix = parts[0].rsplit(" ", 1)[0]
    return [parts[0], *(f"{prefix} {p}" for p in parts[1:])]


def to_args(command: str) -> list[str]:
    """The command's argv after `harness-learn`, its placeholders made real values."""
    command = FRAGMENTS.get(command, command)
    command = re.sub(r"\[(-[^\]]+)\]", r"\1", command)  # optional flags: given
    command = command.replace('"..."', '"too slow"')  # a value left to the reader
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)  # PGPASSWORD=... before the command
    assert words[0] in ("$H", "harness-learn"), command
    args = []
    for i, word in enumerate(words[1:], start=2):
        if word == "...":  # adapt's "the rest", a group's "any command", or "more of these"
            if args[:1] != ["adapt"] and i == len(words) and not any(a.startswith("-") for a in args):
                args.append("--help")
            continue
        word = PLACEHOLDERS.get(word, word)
        args.append(word.split("|")[0] if "|" in word and not word.startswith("{") else word)
    if args[:1] == ["adapt"] and "--config" not in args:  # `adapt ...`: what every run needs
        args += [a for flag, value in zip(ADAPT_BASICS[::2], ADAPT_BASICS[1::2], strict=True)
                 if flag not in args for a in (flag, value)]
    return args


def parse(args: list[str]) -> None:
    """Parse `args` as `harness-learn` would, without running anything: each group resolves
    its subcommand, the last command parses its options (`--help` ends it, accepted)."""
    command: Any = typer.main.get_command(app)  # typer's own click: its classes, not click's
    ctx, rest, name = None, list(args), "harness-learn"
    try:
        while True:
            ctx = command.make_context(name, rest, parent=ctx)
            if not hasattr(command, "resolve_command"):  # a command, not a group
                break
            rest = [*ctx._protected_args, *ctx.args]  # what follows the group's own options
            if not rest:
                return  # `harness-learn bench` alone: the group exists
            name, command, rest = command.resolve_command(ctx, rest)
            assert command is not None, f"no command {name!r}"
    except typer.Exit as done:  # --help
        assert done.exit_code == 0
        return
    if command.name == "adapt":
        field_values(AdaptConfig, dict(ctx.params))  # checks Literal choices (edit formats, ...)


COMMANDS = documented_commands()


def test_the_docs_hold_at_least_todays_commands() -> None:
    assert len(COMMANDS) >= FLOOR, f"found {len(COMMANDS)} documented commands, want >= {FLOOR}"


@pytest.mark.parametrize("where,command", COMMANDS, ids=[f"{w}:{c[:60]}" for w, c in COMMANDS])
def test_each_documented_command_parses(where: str, command: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    args = to_args(command)
    try:
        parse(args)
    except typer.TyperException as exc:  # BadParameter, NoSuchOption, MissingParameter, ...
        pytest.fail(f"{where}: `{command}` is refused: {exc.format_message()} (argv {args})")


def test_a_refused_value_is_caught() -> None:
    """The check can fail: an edit format no `EditFormat` holds is refused by the parser."""
    with pytest.raises(typer.BadParameter, match="edit-format"):
        parse(to_args("$H adapt --task rg:products --run-dir r --edit-format sonnet"))
    with pytest.raises(typer.TyperException, match="no-such-flag"):
        parse(to_args("harness-learn run --task rg:products --no-such-flag 1"))
    with pytest.raises(typer.TyperException, match="no-such-command"):
        parse(to_args("harness-learn bench no-such-command"))


@pytest.mark.parametrize("fmt", EDIT_FORMATS)
def test_every_edit_format_is_a_setting_in_a_settings_file(fmt: str, tmp_path: Path) -> None:
    """One `EditFormat` (harnesses.edits) for the flag and the TOML: `function` was refused."""
    path = tmp_path / "s.toml"
    path.write_text(f'task = "rg:products"\nrun_dir = "r"\nedit_format = "{fmt}"\n')
    assert read_config_file(path)["edit_format"] == fmt
    parse(["adapt", "--task", "rg:products", "--run-dir", "r", "--edit-format", fmt])
