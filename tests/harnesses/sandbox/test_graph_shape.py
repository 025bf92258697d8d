"""The parent reads a worker's description of its graph as untrusted data: a well-formed one
becomes a `GraphShape`; anything else is refused with the reason, never guessed at."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.sandbox.graph_shape import (
    END,
    START,
    ShapeError,
    check_shape,
    jsonable,
    step_message,
)

GOOD = {"nodes": [{"name": "a", "defer": False, "ends": []},
                  {"name": "b", "defer": True, "ends": ["a", END]}],
        "edges": [[START, "a"]], "waiting": [[["a"], "b"]],
        "branches": [{"source": "a", "ends": ["b", END]}, {"source": "b", "ends": None}],
        "state": ["question", "answer", "bad key!"], "input_schema": {"properties": {}}}


def test_a_well_formed_shape_is_read() -> None:
    shape = check_shape(GOOD)
    assert shape.nodes == ("a", "b") and shape.edges == ((START, "a"),)
    assert shape.waiting == ((("a",), "b"),) and shape.deferred == {"b"}
    assert shape.destinations == {"b": ("a", END)} and shape.state == ("question", "answer")
    assert shape.targets("a") == {"b", END} and shape.targets("b") == {"a", "b", END}


@pytest.mark.parametrize(("change", "reason"), [
    ({"nodes": []}, "bad node names"),
    ({"nodes": [{"name": "a"}, {"name": "a"}]}, "bad node names"),
    ({"nodes": [{"name": "__end__"}]}, "bad node names"),
    ({"nodes": [{"name": "x" * 200}]}, "bad node names"),
    ({"edges": [[START, "nowhere"]]}, "unknown node: 'nowhere'"),
    ({"edges": [["a"]]}, "other than pairs"),
    ({"waiting": [[[START], "b"]]}, "unknown node: '__start__'"),
    ({"branches": [{"source": "a", "ends": ["zz"]}]}, "unknown node: 'zz'"),
    ({"branches": "a"}, "`branches` is not a list"),
])
def test_a_malformed_shape_is_refused(change, reason) -> None:
    with pytest.raises(ShapeError, match=reason):
        check_shape({**GOOD, **change})
    with pytest.raises(ShapeError, match="no graph shape"):
        check_shape(None)


def test_state_values_become_bounded_json() -> None:
    from langchain_core.messages import AIMessage

    value = jsonable({"m": [AIMessage("hi")], "s": {1, 2}, "long": "x" * 30_000, "o": object()})
    assert value["m"][0]["content"] == "hi" and value["m"][0]["type"] == "ai"
    assert sorted(value["s"]) == [1, 2] and value["long"].endswith("[10000 more characters]")
    assert value["o"].startswith("<object object")
    big = step_message(1, [["a", ["k"]]], {f"k{i}": "y" * 19_000 for i in range(300)}, [])
    assert set(big["values"]) == {"__omitted__"} and big["tasks"] == [["a", ["k"]]]
