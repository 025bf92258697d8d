"""A harness's Solver parameters are checked by value in the parent (harnesses/solver_params.py):
a bad one fails the harness's own call with a line naming it, and never reaches the endpoint,
whose refusal would otherwise be recorded as an infrastructure failure."""

from __future__ import annotations

import asyncio
import math

import pytest

from harness_learning.harnesses.sandbox.records import failure_kind
from harness_learning.harnesses.solver_params import MAX_SOLVER_TOKENS, check_params
from harness_learning.harnesses.toolbox import Toolbox, ToolInputError


class Recorder:
    def __init__(self) -> None:
        self.calls: list[dict] = []

    async def acomplete(self, messages, **params):
        self.calls.append(params)
        return "ok"


GOOD = [
    {"temperature": 0}, {"temperature": 2.0}, {"temperature": 0.7, "top_p": 1},
    {"top_p": 0.0}, {"max_tokens": 1}, {"max_tokens": MAX_SOLVER_TOKENS}, {"seed": 0},
    {"seed": 2**31 - 1}, {"stop": "\n"}, {"stop": ["a", "b", "c", "d"]}, {"stop": ["x" * 32]},
    {"presence_penalty": -2, "frequency_penalty": 2.0},
]

BAD = [
    ({"temperature": "hot"}, "temperature takes a number from 0 to 2"),
    ({"temperature": 2.5}, "temperature takes a number"),
    ({"temperature": -0.1}, "temperature takes a number"),
    ({"temperature": math.nan}, "temperature takes a number"),
    ({"temperature": True}, "temperature takes a number"),
    ({"top_p": 1.5}, "top_p takes a number from 0 to 1"),
    ({"top_p": "1"}, "top_p takes a number"),
    ({"max_tokens": 0}, "max_tokens takes a whole number from 1"),
    ({"max_tokens": -3}, "max_tokens takes a whole number"),
    ({"max_tokens": 10**9}, f"from 1 to {MAX_SOLVER_TOKENS}"),
    ({"max_tokens": 8.0}, "max_tokens takes a whole number"),
    ({"seed": -1}, "seed takes a whole number from 0"),
    ({"seed": "x"}, "seed takes a whole number"),
    ({"seed": 2**40}, "seed takes a whole number"),
    ({"stop": 5}, "stop takes a string or a list of 1 to 4 strings"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "a list of 1 to 4 strings"),
    ({"stop": ["x" * 33]}, "each of 1 to 32 characters"),
    ({"stop": [""]}, "each of 1 to 32 characters"),
    ({"stop": []}, "a list of 1 to 4 strings"),
    ({"stop": ["a", 1]}, "a list of 1 to 4 strings"),
    ({"presence_penalty": 7}, "presence_penalty takes a number from -2 to 2"),
    ({"frequency_penalty": "high"}, "frequency_penalty takes a number"),
    ({"n": 4}, "tools.llm does not take ['n']"),
    ({"api_base": "http://elsewhere"}, "does not take ['api_base']"),
]


@pytest.mark.parametrize("params", GOOD)
def test_values_in_range_pass_unchanged(params: dict) -> None:
    assert check_params(params) == params


@pytest.mark.parametrize(("params", "message"), BAD)
def test_a_bad_value_is_refused_with_what_the_parameter_takes(params: dict, message: str) -> None:
    with pytest.raises(ToolInputError, match="tools.llm") as info:
        check_params(params)
    assert message in str(info.value)
    assert "\n" not in str(info.value), "one line"


def test_none_means_the_runs_default() -> None:
    assert check_params({"temperature": None, "stop": None, "max_tokens": 8}) == {"max_tokens": 8}


@pytest.mark.parametrize(("tool", "args"), [
    ("llm", {"messages": "hi", "params": {"temperature": "hot"}}),
    ("chat", {"messages": [{"role": "user", "content": "hi"}], "tools": [],
              "params": {"stop": ["a"] * 9}}),
])
def test_the_toolbox_refuses_before_the_solver_is_asked(tool: str, args: dict) -> None:
    """Both ways a harness reaches the Solver (`tools.llm`, `tools.chat_model()`) are checked,
    and the failure is the harness's (`tool`), never infrastructure."""
    solver = Recorder()
    with pytest.raises(ToolInputError) as info:
        asyncio.run(Toolbox(solver).call(tool, args))
    assert solver.calls == [] and failure_kind(info.value) == "tool"


def test_the_runs_own_parameters_are_not_the_harnesss_to_check() -> None:
    solver = Recorder()
    box = Toolbox(solver, solver_params={"max_tokens": 64, "temperature": 0.0})
    asyncio.run(box.call("llm", {"messages": "hi", "params": {"temperature": 1.5, "seed": 3}}))
    assert solver.calls == [{"max_tokens": 64, "temperature": 1.5, "seed": 3}]
