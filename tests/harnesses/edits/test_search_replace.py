"""SEARCH/REPLACE parsing and application on crafted cases."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.edits import EditError, apply_edit, parse_edit
from harness_learning.harnesses.seeds import seed_source

SOURCE = """def build_graph(tools):
    def solve(state):
        reply = tools.llm(state["question"])
        return {"answer": reply}

    return solve
"""


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def apply(source: str, completion: str) -> str:
    return apply_edit(source, parse_edit(completion, "search_replace"))


def test_exact_match_replaces_only_the_matched_lines():
    new = apply(SOURCE, block('        reply = tools.llm(state["question"])\n',
                              '        reply = tools.llm(state["question"]).strip()\n'))
    assert new == SOURCE.replace('tools.llm(state["question"])', 'tools.llm(state["question"]).strip()')


def test_blocks_inside_a_fence_with_prose_around_them():
    completion = ("I will strip the reply.\n```python\n"
                  + block("        return {\"answer\": reply}\n", "        return {\"answer\": reply.strip()}\n")
                  + "```\nDone.")
    assert 'reply.strip()}' in apply(SOURCE, completion)


def test_whitespace_tolerant_match_reindents_the_replacement():
    # The model dropped the 8-space indentation and left trailing spaces.
    search = 'reply = tools.llm(state["question"])   \nreturn {"answer": reply}\n'
    replace = 'reply = tools.llm(state["question"])\nif not reply:\n    reply = "none"\nreturn {"answer": reply}\n'
    new = apply(SOURCE, block(search, replace))
    assert '        if not reply:\n            reply = "none"\n        return {"answer": reply}\n' in new
    assert new.startswith("def build_graph(tools):\n    def solve(state):\n")


def test_tolerant_match_with_too_much_indentation_dedents():
    search = '            reply = tools.llm(state["question"])\n'
    new = apply(SOURCE, block(search, '            reply = tools.llm(state["question"], temperature=0)\n'))
    assert '\n        reply = tools.llm(state["question"], temperature=0)\n' in new


def test_tolerant_match_ignores_blank_lines_at_the_block_ends():
    search = '\n        return {"answer": reply}\n\n\n'
    new = apply(SOURCE, block(search, '        return {"answer": reply[:100]}\n'))
    assert 'reply[:100]' in new
    assert new.count("\n") == SOURCE.count("\n")


def test_unmatched_search_is_named_and_hints_the_closest_line():
    with pytest.raises(EditError) as e:
        apply(SOURCE, block("        reply = tools.llm(state['q'])\n", "x\n"))
    assert e.value.kind == "unmatched_search"
    assert "tools.llm" in e.value.detail


def test_ambiguous_search_is_named_with_the_places():
    source = "a = 1\nb = 2\na = 1\n"
    with pytest.raises(EditError) as e:
        apply(source, block("a = 1\n", "a = 3\n"))
    assert e.value.kind == "ambiguous_search"
    assert "lines 1, 3" in e.value.detail


def test_several_blocks_apply_in_order_each_to_the_previous_result():
    completion = block("a = 1\n", "a = 10\n") + "and then\n" + block("a = 10\nb = 2\n", "a = 10\nb = 20\n")
    assert apply("a = 1\nb = 2\n", completion) == "a = 10\nb = 20\n"


def test_empty_replace_deletes_lines():
    assert apply("a = 1\nb = 2\nc = 3\n", block("b = 2\n", "")) == "a = 1\nc = 3\n"


def test_crlf_completion_applies_to_lf_source():
    completion = block("b = 2\n", "b = 3\n").replace("\n", "\r\n")
    assert apply("a = 1\nb = 2\n", completion) == "a = 1\nb = 3\n"


def test_tabs_and_unicode_content_survive():
    source = "def f():\n\treturn 'héllo ∑'\n"
    assert apply(source, block("\treturn 'héllo ∑'\n", "\treturn 'grüß 🙂'\n")) == "def f():\n\treturn 'grüß 🙂'\n"


def test_unicode_line_separators_are_not_newlines():
    source = "x = 'a\u2028b'\ny = 1\n"
    assert apply(source, block("y = 1\n", "y = 2\n")) == "x = 'a\u2028b'\ny = 2\n"


@pytest.mark.parametrize(
    ("completion", "kind"),
    [
        ("no blocks at all", "no_edit_found"),
        ("<<<<<<< SEARCH\na = 1\n=======\na = 2\n", "malformed_block"),  # never closed
        ("<<<<<<< SEARCH\na = 1\n>>>>>>> REPLACE\n", "malformed_block"),  # no divider
        (">>>>>>> REPLACE\n", "malformed_block"),
        ("<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n", "malformed_block"),  # empty SEARCH
        ("<<<<<<< SEARCH\na\n=======\n<<<<<<< SEARCH\n", "malformed_block"),
    ],
)
def test_malformed_completions_are_named(completion, kind):
    with pytest.raises(EditError) as e:
        apply("a = 1\n", completion)
    assert e.value.kind == kind


def test_deleting_everything_is_an_empty_result():
    with pytest.raises(EditError) as e:
        apply("a = 1\n", block("a = 1\n", ""))
    assert e.value.kind == "empty_result"


def test_a_real_seed_edit_round_trips():
    source = seed_source("reasoning_direct")
    completion = block(
        '        answer = reply.rsplit("Answer:", 1)[-1].strip() if "Answer:" in reply else reply.strip()\n',
        '        answer = reply.rsplit("Answer:", 1)[-1].strip() if "Answer:" in reply else reply.strip()\n'
        '        answer = answer.rstrip(".")\n',
    )
    new = apply(source, completion)
    compile(new, "candidate.py", "exec")
    assert new.count("\n") == source.count("\n") + 1
