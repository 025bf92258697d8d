"""A harness graph's shape and its step-by-step run, as data that crosses the bridge.

The worker (child) describes the graph it compiled (`describe`) and, for a served run, streams
the state after each superstep (`stream_steps`), so the parent can mirror the harness's own
nodes and edges without running any of its code. The parent checks what it receives
(`check_shape`): a worker is untrusted, and a malformed shape is refused, never guessed at.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.pregel import Pregel

START, END = "__start__", "__end__"
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,99}$")
MAX_NODES = 200
VALUE_CHARS = 20_000
"""Longest string kept of a state value in a step message (the rest is cut, with a note)."""
DEFAULT_RECURSION_LIMIT = 100
"""A harness run's LangGraph recursion limit unless a served run's config sets one."""
STEP_BYTES = 4 * 1024 * 1024
"""A step message larger than this carries a note instead of the state's values."""


# -- child side ----------------------------------------------------------------------------

def describe(compiled: CompiledStateGraph) -> dict[str, Any]:
    """Nodes, edges, conditional branches and input schema of a compiled StateGraph."""
    builder = compiled.builder
    try:
        schema = jsonable(compiled.get_input_jsonschema())
    except Exception:  # a state type pydantic cannot describe: the parent asks for `question`
        schema = {}
    return {
        "nodes": [{"name": name, "defer": bool(getattr(spec, "defer", False)),
                   "ends": list(getattr(spec, "ends", None) or ())}
                  for name, spec in builder.nodes.items()],
        "edges": sorted([list(edge) for edge in builder.edges]),
        "waiting": sorted([[sorted(starts), end] for starts, end in builder.waiting_edges]),
        "branches": [{"source": source, "ends": None if spec.ends is None
                      else sorted(set(spec.ends.values()))}
                     for source, specs in builder.branches.items() for spec in specs.values()],
        "state": sorted(k for k in builder.channels if isinstance(k, str)),
        "input_schema": schema,
    }


def where_called() -> dict[str, Any]:
    """The top-level node making a call (from inside a subgraph of that node too); a served
    run's parent traces the call under it."""
    try:
        from langgraph.config import get_config

        config = get_config()
    except RuntimeError:  # not inside a node
        return {}
    path = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
    node = path.split("|")[0].split(":")[0] if path else None
    return {"node": node or (config.get("metadata") or {}).get("langgraph_node")}


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """A served run's config for the harness graph: its recursion limit, tags and metadata."""
    limit = config.get("recursion_limit")
    limit = limit if isinstance(limit, int) and 0 < limit <= 10_000 else DEFAULT_RECURSION_LIMIT
    tags = [t for t in config.get("tags") or [] if isinstance(t, str)]
    meta = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    return {"recursion_limit": limit, "tags": tags, "metadata": meta}


def stream_steps(graph: Pregel, inputs: dict[str, Any], config: dict[str, Any],
                 send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run `graph` on `inputs`, calling `send` after every superstep with the step number,
    the nodes that ran and the keys each wrote, the state's values and the next step's
    nodes; returns the final state. An in-memory checkpointer gives the `next` nodes."""
    from langgraph.checkpoint.memory import InMemorySaver

    graph.checkpointer = InMemorySaver()
    config = {**config, "configurable": {"thread_id": "served"}}
    tasks: list[list[Any]] = []
    values: dict[str, Any] = {}
    for mode, data in graph.stream(inputs, config, stream_mode=["updates", "checkpoints"]):
        if mode == "updates":
            for name, update in (data or {}).items():
                keys = sorted(update) if isinstance(update, dict) else []
                tasks.append([name, keys])
            continue
        step = int(data["metadata"]["step"])
        values = data["values"]
        if step >= 0:
            send(step_message(step, tasks, values, list(data["next"])))
        tasks = []
    return values


def step_message(step: int, tasks: list[list[Any]], values: dict[str, Any],
                 next_nodes: list[str]) -> dict[str, Any]:
    message = {"op": "step", "step": step, "tasks": tasks, "values": jsonable(values),
               "next": next_nodes}
    size = len(json.dumps(message, default=str))
    if size > STEP_BYTES:
        message["values"] = {"__omitted__": f"the state took {size} bytes as JSON"}
    return message


def jsonable(value: object, depth: int = 0) -> Any:
    """`value` as plain JSON data: messages and models as their dicts, long strings cut."""
    if isinstance(value, str):
        if len(value) <= VALUE_CHARS:
            return value
        return value[:VALUE_CHARS] + f"...[{len(value) - VALUE_CHARS} more characters]"
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth > 12:
        return jsonable(repr(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None) or getattr(value, "to_dict", None)
    if callable(dump):
        try:
            return jsonable(dump(), depth + 1)
        except Exception:  # a model that cannot dump itself is shown as text
            return jsonable(repr(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value), depth + 1)
    return jsonable(repr(value))


# -- parent side ---------------------------------------------------------------------------

class ShapeError(ValueError):
    """The worker described a graph that is not well formed."""


@dataclass(frozen=True)
class GraphShape:
    """A harness graph's topology as the worker reported it, checked."""

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    waiting: tuple[tuple[tuple[str, ...], str], ...]
    branches: tuple[tuple[str, tuple[str, ...] | None], ...]
    destinations: dict[str, tuple[str, ...]]
    deferred: frozenset[str]
    input_schema: dict[str, Any]
    state: tuple[str, ...] = ()
    """The harness's state keys."""

    def targets(self, name: str) -> set[str]:
        """Every node `name` can hand over to by an edge, a branch or a declared Command."""
        out = {end for start, end in self.edges if start == name}
        out |= {end for starts, end in self.waiting if name in starts}
        out |= set(self.destinations.get(name, ()))
        for source, ends in self.branches:
            if source == name:
                out |= set(self.nodes) | {END} if ends is None else set(ends)
        return out


def check_shape(data: object) -> GraphShape:
    """The shape in `data`, or ShapeError naming what is wrong."""
    if not isinstance(data, dict):
        raise ShapeError("the worker sent no graph shape")
    nodes = [n.get("name") for n in _list(data, "nodes") if isinstance(n, dict)]
    if not nodes or len(nodes) > MAX_NODES or len(set(nodes)) != len(nodes) or not all(
            isinstance(n, str) and NAME.match(n) and n not in (START, END) for n in nodes):
        raise ShapeError(f"bad node names: {nodes[:20]!r}")
    known = set(nodes)

    def endpoint(value: object, *extra: str) -> str:
        if not isinstance(value, str) or value not in known | set(extra):
            raise ShapeError(f"an edge names an unknown node: {value!r}")
        return value

    edges = tuple((endpoint(e[0], START), endpoint(e[1], END)) for e in _pairs(data, "edges"))
    waiting = tuple((tuple(endpoint(s) for s in _list_of(w[0])), endpoint(w[1], END))
                    for w in _pairs(data, "waiting"))
    branches = []
    for branch in _list(data, "branches"):
        ends = branch.get("ends") if isinstance(branch, dict) else None
        ends = None if ends is None else tuple(endpoint(e, END) for e in _list_of(ends))
        branches.append((endpoint(branch.get("source") if isinstance(branch, dict) else None,
                                  START), ends))
    destinations = {n["name"]: tuple(endpoint(e, END) for e in _list_of(n.get("ends") or []))
                    for n in data["nodes"] if n.get("ends")}
    deferred = frozenset(n["name"] for n in data["nodes"] if n.get("defer") is True)
    schema = data.get("input_schema")
    state = tuple(k for k in _list(data, "state") if isinstance(k, str) and NAME.match(k))
    return GraphShape(tuple(nodes), edges, waiting, tuple(branches), destinations, deferred,
                      schema if isinstance(schema, dict) else {}, state)


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ShapeError(f"`{key}` is not a list")
    return value


def _list_of(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ShapeError(f"expected a list, got {type(value).__name__}")
    return value


def _pairs(data: dict[str, Any], key: str) -> list[list[Any]]:
    pairs = _list(data, key)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise ShapeError(f"`{key}` holds something other than pairs")
    return pairs
