"""The parent-side tools: argument checks, result caps, what a call records, retriever and
interpreter."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from harness_learning.harnesses.sandbox.records import failure_kind
from harness_learning.harnesses.toolbox import (
    MAX_K,
    MAX_TEXT_CHARS,
    Toolbox,
    ToolInputError,
)
from harness_learning.retrieval.passage import Passage


@dataclass
class Done:
    text: str
    prompt_tokens: int = 5
    completion_tokens: int = 3
    cached: bool = False
    cost: float = 0.01
    model: str = "scripted"


class Echo:
    def __init__(self, text=None):
        self.text, self.calls = text, []

    async def acomplete(self, messages, **params):
        self.calls.append((messages, params))
        return Done(self.text if self.text is not None else f"echo {messages}")


class Shelf:
    def __init__(self):
        self.asked = []

    def search(self, query, k=5):
        self.asked.append((query, k))
        return [Passage(f"T{i}", "x" * 30_000, 1.0 / (i + 1), f"id{i}") for i in range(k)]

    def search_batch(self, queries, k=5):
        return [self.search(q, k) for q in queries]


def call(box, tool, **args):
    return asyncio.run(box.call(tool, args))


def test_llm_records_tokens_and_passes_allowed_params():
    solver = Echo()
    reply = call(Toolbox(solver), "llm", messages="hi", params={"temperature": 0.5})
    assert reply.result == "echo hi" and reply.tokens == 8 and reply.meta["model"] == "scripted"
    assert solver.calls == [("hi", {"temperature": 0.5})]


def test_configured_solver_params_are_defaults_a_harness_may_override():
    solver = Echo()
    box = Toolbox(solver, solver_params={"temperature": 0.0, "max_tokens": 64})
    call(box, "llm", messages="a", params={"temperature": 0.7})
    assert solver.calls == [("a", {"temperature": 0.7, "max_tokens": 64})]


@pytest.mark.parametrize("messages, params", [
    (None, {}), ([], {}), ([{"role": "user"}], {}), ("hi", {"api_base": "http://elsewhere"}),
])
def test_llm_rejects_bad_arguments(messages, params):
    with pytest.raises(ToolInputError):
        call(Toolbox(Echo()), "llm", messages=messages, params=params)


def test_llm_caps_one_result():
    reply = call(Toolbox(Echo("y" * (MAX_TEXT_CHARS + 10))), "llm", messages="hi")
    assert len(reply.result) == MAX_TEXT_CHARS and reply.meta["truncated_from"] == MAX_TEXT_CHARS + 10


def test_llm_records_the_tokens_and_price_the_ledger_sums():
    reply = call(Toolbox(Echo()), "llm", messages="a")
    assert reply.tokens == 8 and reply.meta["cost"] == 0.01
    assert reply.meta["prompt_tokens"] == 5 and reply.meta["completion_tokens"] == 3


def test_search_caps_k_and_passage_text():
    shelf = Shelf()
    reply = call(Toolbox(retriever=shelf), "search", query="paris", k=500)
    assert shelf.asked == [("paris", MAX_K)] and len(reply.result) == MAX_K
    assert Passage.from_dict(reply.result[0]).id == "id0"
    assert len(reply.result[0]["text"]) == 20_000


def test_missing_parts_fail_as_tool_errors():
    with pytest.raises(ToolInputError, match="retriever"):
        call(Toolbox(), "search", query="x", k=3)
    with pytest.raises(ToolInputError, match="Solver"):
        call(Toolbox(), "llm", messages="x")
    assert failure_kind(ToolInputError("x")) == "tool"


def test_python_runs_in_a_fresh_sandbox_process():
    reply = call(Toolbox(), "python", code="import os\nprint(sum(range(10)), os.getcwd() != '/')",
                 timeout=10)
    assert reply.result == {"stdout": "45 True\n", "error": None}
