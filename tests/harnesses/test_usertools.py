"""The user's own tools in the parent: what counts as a tool, argument validation against the
schema, JSON results and their cap, and the cache of deterministic tools."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.tools import tool

from harness_learning.harnesses.toolbox import Toolbox, ToolInputError
from harness_learning.harnesses.usertools import (
    MAX_RESULT_CHARS,
    ToolArgumentError,
    ToolSetupError,
    build_user_tools,
    called_tools,
    check_tools_given,
    missing_tools,
)

CALLS: list[dict] = []


@tool
def unit_price(item: str, quantity: int = 1) -> dict:
    """Price of `quantity` units of an item."""
    CALLS.append({"item": item, "quantity": quantity})
    return {"item": item, "total": 0.5 * quantity}


def shout(text: str, times: int) -> str:
    """The text in capitals, `times` times."""
    return text.upper() * times


shout.deterministic = True


def call(tools, name, **args):
    return asyncio.run(tools.call(name, args))


def test_a_langchain_tool_is_validated_against_its_schema():
    tools = build_user_tools([unit_price])
    assert call(tools, "unit_price", item="apple", quantity=3).result == {"item": "apple",
                                                                          "total": 1.5}
    with pytest.raises(ToolArgumentError) as bad_type:
        call(tools, "unit_price", item="apple", quantity="many")
    message = str(bad_type.value)
    assert "quantity: Input should be a valid integer" in message
    assert 'Schema: {"properties": {"item": {"type": "string"}' in message
    with pytest.raises(ToolArgumentError, match="missing argument 'item'"):
        call(tools, "unit_price", quantity=2)
    with pytest.raises(ToolArgumentError, match="unknown argument 'colour'"):
        call(tools, "unit_price", item="apple", colour="red")


def test_an_unknown_tool_lists_the_available_ones():
    tools = build_user_tools([unit_price, shout])
    with pytest.raises(ToolArgumentError, match="no tool 'price'; available: shout, unit_price"):
        call(tools, "price", item="x")


def test_a_typed_function_becomes_a_tool_and_deterministic_ones_are_cached():
    tools = build_user_tools([shout])
    spec = tools.specs()[0]
    assert spec["name"] == "shout" and spec["deterministic"] is True
    assert spec["parameters"]["required"] == ["text", "times"]
    first, second = call(tools, "shout", text="a", times=2), call(tools, "shout", text="a", times=2)
    assert first.result == "AA" and not first.cached and second.cached
    CALLS.clear()
    lc = build_user_tools([unit_price])  # not declared deterministic: runs every time
    call(lc, "unit_price", item="a")
    again = call(lc, "unit_price", item="a")
    assert len(CALLS) == 2 and not again.cached


def test_factories_lists_and_bad_objects():
    tools = build_user_tools([lambda: [unit_price, shout]], ["factory"])
    assert tools.names == ["shout", "unit_price"]
    with pytest.raises(ToolSetupError, match="a int is not a LangChain tool"):
        build_user_tools([3], ["mod:three"])
    with pytest.raises(ToolSetupError, match="two tools are named 'shout'"):
        build_user_tools([shout, shout])

    def python(code: str) -> str:
        """Clashes with the built-in interpreter."""
        return code

    with pytest.raises(ToolSetupError, match="the name 'python' is not usable"):
        build_user_tools([python])

    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ToolSetupError, match="needs a docstring"):
        build_user_tools([undocumented])


def test_results_are_json_and_capped():
    def big(n: int) -> str:
        """A long text."""
        return "x" * n

    def odd(n: int) -> object:
        """Not JSON."""
        return {1, 2}

    tools = build_user_tools([big, odd])
    reply = call(tools, "big", n=MAX_RESULT_CHARS * 2)
    assert len(reply.result) == MAX_RESULT_CHARS and reply.meta["truncated_from"] > MAX_RESULT_CHARS
    assert call(tools, "odd", n=1).result == "{1, 2}"


def test_the_toolbox_serves_user_tools_and_says_when_there_are_none():
    box = Toolbox(user_tools=build_user_tools([shout]))
    assert asyncio.run(box.call("tool", {"name": "shout", "args": {"text": "b", "times": 1}})
                       ).result == "B"
    assert box.tool_specs()[0]["name"] == "shout"
    with pytest.raises(ToolInputError, match="missing argument 'times'"):
        asyncio.run(box.call("tool", {"name": "shout", "args": {"text": "b"}}))
    with pytest.raises(ToolInputError, match="this run has no tools of its own"):
        asyncio.run(Toolbox().call("tool", {"name": "shout", "args": {}}))


def test_the_prompt_section_lists_name_description_and_schema():
    text = build_user_tools([unit_price, shout]).describe()
    assert "tools.call('unit_price', **args)" in text and "Price of `quantity` units" in text
    assert '"quantity": {"default": 1, "type": "integer"}' in text and "deterministic" in text


CALLER = """
def build_graph(t):
    def node(state):
        price = t.unit_price(item="pear")
        loud = t.call("shout", text="a", times=2)
        note = t.llm("hi") + str(t.search("q")) + str(t.python("1"))
        agent = make_agent(t.chat_model(), t.langchain_tools())
        return {"answer": other.lookup(x=1)}
    return node
"""


def test_the_tools_a_harness_calls_are_read_from_its_source():
    # build_graph's own name for `tools`; built-ins and other objects' methods are not tools
    assert called_tools(CALLER) == ["unit_price", "shout", "langchain_tools()"]
    assert called_tools("def build_graph(:") == []  # the compiler reports a broken file
    # a compiled graph alone: its `tools` is its own list, not the harness's tools
    assert called_tools("tools = [f]\ntools.append(g)\ngraph = make(tools)\n") == []


def test_a_tool_called_but_not_given_is_one_line_naming_it():
    given = build_user_tools([unit_price])
    assert missing_tools(CALLER, given) == ["shout"]
    assert missing_tools(CALLER, build_user_tools([unit_price, shout])) == []
    # an agent handed tools.langchain_tools() with no tools given would run with none
    assert missing_tools(CALLER, None) == ["unit_price", "shout", "langchain_tools()"]
    with pytest.raises(ToolSetupError) as refused:
        check_tools_given(CALLER, given)
    message = str(refused.value)
    assert message.startswith("the harness calls tools.shout, which was not given (tools "
                              "given: unit_price); pass the tools it calls with --tools")
    assert "\n" not in message
    check_tools_given(None, None)  # a seed: nothing to check
