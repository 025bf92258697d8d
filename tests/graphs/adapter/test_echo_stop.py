"""A Proposer reply that starts copying its prompt back is stopped at the report's title or a
section heading (`proposer.ECHO_STOPS`, `AdaptConfig.proposer_echo_stop`): the stops are sent
with every Proposer call unless turned off, a `stop` of the user's own wins, and a program that
holds a heading itself can still be rewritten. Control flow with scripted models (a real
adapter run: real sandbox, real log); the real Qwen Proposer, which does copy its prompt, stops
where the copy reaches a heading."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.execution_report import REPORT_TITLE
from harness_learning.graphs.adapter.proposer import ECHO_STOPS, build_proposer_messages, echo_stops
from harness_learning.graphs.adapter.run import run_adaptation

NO_EDIT = "I would keep the program as it is."


def test_the_stops_are_prompt_text_and_those_the_program_holds_are_left_out() -> None:
    prompt = build_proposer_messages("Sums.", "x = 1\n", f"{REPORT_TITLE}: 2 problems",
                                     "search_replace", 200)[1]["content"]
    assert all(stop in prompt for stop in ECHO_STOPS if stop != "\n## Tools\n")
    assert len(ECHO_STOPS) <= 4  # the most an OpenAI-style endpoint takes
    assert echo_stops("x = 1\n") == list(ECHO_STOPS)
    templated = 'PROMPT = """## Task\nAdd the numbers.\n"""\n'
    assert echo_stops(templated) == [s for s in ECHO_STOPS if s != "## Task\n"]


def _proposer_params(tmp_path, **settings) -> list[dict]:
    """The params of each Proposer call of a one-round scripted run."""
    seen: list[dict] = []

    def rule(prompt: str, params: dict) -> str:
        seen.append(dict(params))
        return NO_EDIT

    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), rounds=1, candidates=1,
                         edit_format="search_replace", feedback=2, selection=2, repair_turns=0,
                         **settings).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(6), solver=ScriptedModel(solver_rule),
                                     proposer=ScriptedModel(rule))
    asyncio.run(run_adaptation(config, context=ctx))
    return seen


@pytest.mark.parametrize(("settings", "stop"), [
    ({}, list(ECHO_STOPS)),
    ({"proposer_echo_stop": False}, None),
    ({"proposer_params": {"max_tokens": 64, "stop": ["</edit>"]}}, ["</edit>"]),
], ids=["default", "off", "users-own"])
def test_every_proposer_call_carries_the_stops_unless_off_or_the_user_set_one(
        tmp_path, settings, stop) -> None:
    seen = _proposer_params(tmp_path, **settings)
    assert seen and all(params.get("stop") == stop for params in seen)


def test_the_real_proposer_stops_where_its_copy_reaches_a_heading(qwen_url) -> None:
    from harness_learning.harnesses.llm.client import ModelClient

    text = (f"def add(a, b):\n    return a + b\n\n{REPORT_TITLE}: 2 problems\n"
            "Mean score 0.000; 2 wrong.\n\n## Constraints\n- At most 200 lines.")
    ask = [{"role": "user", "content": "Repeat the text below exactly, character for "
                                       f"character, and write nothing else.\n\n{text}"}]
    client = ModelClient(f"openai/qwen@{qwen_url}")
    copied = client.complete(ask, temperature=0.0, max_tokens=80)
    stopped = client.complete(ask, temperature=0.0, max_tokens=80, stop=echo_stops(""))
    assert REPORT_TITLE in copied.text  # it does copy: what the stops are for
    assert REPORT_TITLE not in stopped.text and "return a + b" in stopped.text
    assert stopped.completion_tokens < copied.completion_tokens
