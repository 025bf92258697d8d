"""Whole-program edits: which fenced block is the program."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.edits import EditError, apply_edit, parse_edit

PROGRAM = "def build_graph(tools):\n    return None\n"


def parse(completion: str) -> str:
    return apply_edit("old = 1\n", parse_edit(completion, "whole_program"))


def test_single_python_block_is_the_program():
    assert parse(f"Here it is:\n```python\n{PROGRAM}```\nThanks") == PROGRAM


def test_untagged_and_tilde_fences_are_accepted():
    assert parse(f"```\n{PROGRAM}```") == PROGRAM
    assert parse(f"~~~py\n{PROGRAM}~~~") == PROGRAM


def test_the_block_defining_build_graph_wins_over_examples():
    completion = f"```python\nprint(run())\n```\n\n```python\n{PROGRAM}```\n```bash\nls\n```"
    assert parse(completion) == PROGRAM


def test_two_blocks_defining_build_graph_are_multiple_programs():
    with pytest.raises(EditError) as e:
        parse(f"```python\n{PROGRAM}```\nor\n```python\n{PROGRAM}```")
    assert e.value.kind == "multiple_programs"


def test_several_blocks_none_defining_build_graph_are_multiple_programs():
    with pytest.raises(EditError) as e:
        parse("```python\na = 1\n```\n```python\nb = 2\n```")
    assert e.value.kind == "multiple_programs"


def test_longer_fence_keeps_inner_triple_backticks():
    inner = 'PROMPT = """use\n```\ncode\n```\n"""\n' + PROGRAM
    assert parse(f"````python\n{inner}````") == inner


def test_unclosed_fence_is_malformed():
    with pytest.raises(EditError) as e:
        parse(f"```python\n{PROGRAM}")
    assert e.value.kind == "malformed_block"


def test_no_fence_is_no_edit_found():
    with pytest.raises(EditError) as e:
        parse(PROGRAM)
    assert e.value.kind == "no_edit_found"


def test_empty_block_is_empty_result():
    with pytest.raises(EditError) as e:
        parse("```python\n\n```")
    assert e.value.kind == "empty_result"


def test_crlf_program_becomes_lf():
    assert parse(f"```python\r\n{PROGRAM.replace(chr(10), chr(13) + chr(10))}```") == PROGRAM


def test_indented_fence_strips_its_indentation():
    completion = "1. The program:\n   ```python\n   def build_graph(tools):\n       return None\n   ```"
    assert parse(completion) == PROGRAM
