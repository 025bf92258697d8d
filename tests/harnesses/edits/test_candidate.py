"""parse_and_apply: the one way a completion becomes a new source, on crafted cases and under fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_learning.harnesses.edits import (
    EDIT_ERROR_KINDS,
    Edit,
    EditError,
    parse_and_apply,
    unified_diff,
)

SOURCE = "def build_graph(tools):\n    x = 1\n    return x\n"
GOOD = "<<<<<<< SEARCH\n    x = 1\n=======\n    x = 2\n>>>>>>> REPLACE\n"


def test_applied_candidate_has_source_diff_and_edit():
    c = parse_and_apply(SOURCE, GOOD, "search_replace", "stop")
    assert (c.parsed, c.applied, c.failure) == (True, True, None)
    assert c.new_source == SOURCE.replace("x = 1", "x = 2")
    assert "-    x = 1\n+    x = 2\n" in c.diff
    assert Edit.from_dict(c.edit.to_dict()) == c.edit


def test_truncated_completion_is_never_adopted_even_if_it_would_apply():
    c = parse_and_apply(SOURCE, GOOD, "search_replace", "length")
    assert (c.parsed, c.applied, c.new_source) == (False, False, None)
    assert c.failure.kind == "truncated"


def test_parsed_but_not_applied():
    c = parse_and_apply(SOURCE, GOOD.replace("x = 1", "y = 1"), "search_replace", "stop")
    assert (c.parsed, c.applied, c.failure.kind) == (True, False, "unmatched_search")


def test_not_parsed():
    c = parse_and_apply(SOURCE, "I would change x.", "whole_program", None)
    assert (c.parsed, c.applied, c.failure.kind) == (False, False, "no_edit_found")


def test_no_op_edit_is_applied_but_unchanged():
    c = parse_and_apply(SOURCE, GOOD.replace("x = 2", "x = 1"), "search_replace", "stop")
    assert c.applied and c.unchanged


def test_unknown_format_is_a_configuration_error():
    with pytest.raises(ValueError, match="unknown edit format"):
        parse_and_apply(SOURCE, GOOD, "udiff", "stop")


def test_edit_error_kinds_are_closed():
    with pytest.raises(ValueError):
        EditError("whatever", "x")  # type: ignore[arg-type]


def test_diff_of_crlf_source_shows_only_real_changes():
    old = "a\r\nb\r\n"
    assert unified_diff(old, "a\nb\n") == ""


# -- fuzzing ----------------------------------------------------------------------------------

MARKERS = ["<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "```", "```python", "~~~", "````",
           "    x = 1", "\tx = 1", "def build_graph(tools):", "", " ", "\r", "\u2028", "é∑🙂"]
line = st.one_of(st.sampled_from(MARKERS), st.text(max_size=30))
completions = st.lists(line, max_size=30).flatmap(
    lambda lines: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda nl: nl.join(lines)))
sources = st.one_of(
    st.just(SOURCE),
    st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=20)), max_size=15).map("\n".join),
)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(c, source):
    assert c.parsed or not c.applied
    if c.applied:
        assert c.failure is None and isinstance(c.new_source, str) and c.new_source.strip()
    else:
        assert isinstance(c.failure, EditError) and c.failure.kind in EDIT_ERROR_KINDS
        assert c.new_source is None


@FUZZ
@given(source=sources, completion=completions,
       fmt=st.sampled_from(["search_replace", "whole_program"]),
       finish=st.sampled_from([None, "stop", "length"]))
def test_arbitrary_completions_never_raise(source, completion, fmt, finish):
    _check(parse_and_apply(source, completion, fmt, finish), source)


@FUZZ
@given(source=sources, search=st.text(max_size=60), replace=st.text(max_size=60),
       cut=st.integers(min_value=0, max_value=200), nl=st.sampled_from(["\n", "\r\n"]))
def test_truncated_and_crlf_blocks_never_raise(source, search, replace, cut, nl):
    completion = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n".replace("\n", nl)
    _check(parse_and_apply(source, completion[:cut], "search_replace", "stop"), source)
    _check(parse_and_apply(source, f"```python\n{completion[:cut]}", "whole_program", "stop"), source)


@FUZZ
@given(lines=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=25),
                      min_size=1, max_size=12), pick=st.data())
def test_a_unique_exact_block_always_applies(lines, pick):
    """Property: quoting a run of lines that occurs once replaces exactly that run."""
    lines = [x.replace("\r", "").replace("\n", "") for x in lines]
    source = "".join(x + "\n" for x in lines)
    i = pick.draw(st.integers(0, len(lines) - 1))
    j = pick.draw(st.integers(i + 1, len(lines)))
    run = lines[i:j]
    if not any(s.strip() for s in run) or any(m in x for x in run for m in ("=====", "<<<<<", ">>>>>")):
        return
    occurrences = sum(lines[k:k + len(run)] == run for k in range(len(lines) - len(run) + 1))
    completion = "<<<<<<< SEARCH\n" + "".join(x + "\n" for x in run) + "=======\nNEW\n>>>>>>> REPLACE\n"
    c = parse_and_apply(source, completion, "search_replace", "stop")
    if occurrences == 1:
        assert c.applied, c.failure
        assert c.new_source == "".join(x + "\n" for x in lines[:i] + ["NEW"] + lines[j:])
    else:
        assert c.failure.kind == "ambiguous_search"
