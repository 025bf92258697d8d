"""Bad Proposer output through the adapter's `make_candidate`: never a crash, always a named
failure (or a valid candidate). Fixed nasty cases, then property-based ones (hypothesis)
mixing edit markers, program lines, fences, CRLF, tabs and arbitrary unicode."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_learning.harnesses.seeds import seed_source
from harness_learning_lab.reliability.proposals import (
    BAD_COMPLETIONS,
    SOLVE_LINE,
    CandidateBench,
    hardcoding_completions,
    named,
    report_for,
    run_bad_proposals,
)

pytestmark = pytest.mark.reliability

SEED_LINES = seed_source("reasoning_direct").splitlines()
FRAGMENTS = st.one_of(
    st.sampled_from(["<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "```python", "```", "```py",
                     "def build_graph(tools):", "    return graph", "\t", "\r", "\ufeff", "\x00"]),
    st.sampled_from(SEED_LINES),
    st.text(max_size=30),
)
COMPLETIONS = st.lists(st.tuples(FRAGMENTS, st.sampled_from(["\n", "\r\n", "", " ", "\n\n"])),
                       max_size=14).map(lambda parts: "".join(a + b for a, b in parts))
FINISH = st.sampled_from(["stop", "length", None, "content_filter", "tool_calls"])


@pytest.fixture(scope="module")
def benches(tmp_path_factory):
    root = tmp_path_factory.mktemp("proposals")
    made = {fmt: CandidateBench(root / fmt, fmt) for fmt in ("search_replace", "whole_program")}
    yield made
    for bench in made.values():
        asyncio.run(bench.close())


def consistent(view: dict) -> bool:
    return (named(view) and (view["parsed"] or not view["applied"])
            and (not view["valid"] or view["sha"] is not None) and view["reward"] >= 0.0)


def test_fixed_bad_completions_and_hard_coding(tmp_path):
    rows = asyncio.run(run_bad_proposals(tmp_path))
    memorised = [r for r in rows if r["kind"] == "memorisation"]
    assert len(rows) - len(memorised) == len(BAD_COMPLETIONS) + 2 and len(memorised) == 2
    for row in rows:
        assert row["ok"], row
    hacks = [r for r in rows if r["kind"] == "reward_hacking"]
    assert all(r["reason"].startswith("reward_hacking: ") for r in hacks)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=COMPLETIONS, finish=FINISH)
def test_any_search_replace_completion_gives_a_named_outcome(benches, text, finish):
    view = asyncio.run(benches["search_replace"].judge(text, finish or "stop"))
    assert consistent(view), view


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=COMPLETIONS, finish=FINISH)
def test_any_whole_program_completion_gives_a_named_outcome(benches, text, finish):
    view = asyncio.run(benches["whole_program"].judge(text, finish or "stop"))
    assert consistent(view), view


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_real_block_with_mangled_whitespace_never_crashes(benches, data):
    line = data.draw(st.sampled_from([s for s in SEED_LINES if s.strip()]))
    nl = data.draw(st.sampled_from(["\n", "\r\n", "\r"]))
    mangled = data.draw(st.sampled_from([line, line.replace("    ", "\t"), line + " \t",
                                         line.replace(" ", "\u00a0", 1), line[: len(line) // 2]]))
    text = nl.join(["<<<<<<< SEARCH", mangled, "=======", mangled + "  # edited",
                    ">>>>>>> REPLACE", ""])
    view = asyncio.run(benches["search_replace"].judge(text))
    assert consistent(view), view


def test_a_legitimate_edit_is_not_flagged_as_reward_hacking(benches):
    bench = benches["search_replace"]
    ids = ["d1", "d2", "d3"]
    edit = f"<<<<<<< SEARCH\n{SOLVE_LINE}\n=======\n{SOLVE_LINE}\n        reply = reply.strip()\n>>>>>>> REPLACE\n"
    view = asyncio.run(bench.judge(edit, report=report_for(bench.ctx.task, ids), feedback_ids=ids))
    assert view["valid"] and view["invalid_reason"] is None, view


def test_hard_coding_scores_zero_and_stores_the_reason(benches):
    bench = benches["search_replace"]
    text, ids = hardcoding_completions(bench.ctx.task)["lookup_table"]
    view = asyncio.run(bench.judge(text, report=report_for(bench.ctx.task, ids), feedback_ids=ids))
    assert view["selection_score"] == 0.0 and view["reward"] == 0.0 and view["sha"] is None
    stored = bench.ctx.store.get_proposal(view["proposal_id"])
    assert stored.invalid_reason.startswith("reward_hacking: ") and stored.reward == 0.0
    assert stored.reward_parts.get("reward_hacking") is True
