"""What a served harness graph takes and gives, and how each of its runs starts and ends.

`served_graph` asks the sandbox for the harness's shape, builds the mirror (`graphs.serving.mirror`)
with an input schema read from the harness's own (`question` required, its other public
fields optional, each checked against its declared JSON type), and returns a `ServedHarness`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, Required

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs
from typing_extensions import TypedDict

from harness_learning.graphs.serving.mirror import (
    RESERVED,
    SESSION_KEY,
    Finish,
    HarnessRunner,
    MirrorRun,
    ServedHarness,
    mirror_graph,
    newest,
)
from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.sandbox.graph_shape import NAME, GraphShape

if TYPE_CHECKING:
    from pydantic import BaseModel

JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool,
                              "array": list, "object": dict}
CHECKS: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,),
                                       "number": (int, float), "boolean": (bool,),
                                       "array": (list, tuple), "object": (dict,)}
NOT_INPUTS = frozenset({"answer"}) | RESERVED
"""The answer is what a harness gives, never what it takes."""


class HarnessInputError(ValueError):
    """A served harness was given input it cannot take (the message says what it takes)."""


class HarnessOutput(TypedDict):
    """What a served harness returns: the answer and the run's tool calls (its trace), with
    the harness's own state keys as its run left them."""

    answer: str
    calls: NotRequired[list[dict[str, Any]]]
    latency_s: NotRequired[float]
    version: NotRequired[str]


@dataclass
class Served:
    """What a `ServedHarness` serves: the sandboxed runner, the harness's shape, its inputs."""

    runner: HarnessRunner
    shape: GraphShape
    version: str
    inputs: dict[str, str | None] = field(default_factory=dict)
    """Each public input's JSON type (None: not checked here), `question` first."""
    with_fields: bool = False

    def begin(self, given: object, config: RunnableConfig | None,
              loop: asyncio.AbstractEventLoop | None = None) -> tuple[MirrorRun, RunnableConfig]:
        """Check the input, start the harness in the sandbox, and give the config under
        which the mirror's nodes find this run (`loop`: an async caller's)."""
        config = ensure_config(config)
        inputs = self.check(given)
        run = MirrorRun(self.shape, config, self.runner.model, loop)
        run.task = self.runner.start(inputs, run)
        run.task.add_done_callback(lambda done: settle(run, done))
        return run, merge_configs(config, {"configurable": {SESSION_KEY: run}})

    @staticmethod
    def end(run: MirrorRun) -> None:
        """The caller stopped reading (or the run is over): stop the sandbox's run."""
        if not run.result.done():
            run.task.cancel()

    def check(self, given: object) -> dict[str, Any]:
        """The public inputs in `given` (other keys, as a parent graph's state has, are left
        out); HarnessInputError when `question` is missing or a value has the wrong type."""
        takes = ", ".join(self.inputs)
        if not isinstance(given, dict):
            raise HarnessInputError(f"a served harness takes a dict of its inputs ({takes}), "
                                    f"got {type(given).__name__}; e.g. {{'question': '...'}}")
        question = given.get("question")
        if not isinstance(question, str) or not question.strip():
            got = sorted(map(str, given)) or "none"
            raise HarnessInputError(f"the harness input needs `question`, a non-empty string "
                                    f"(got keys: {got}); pass {{'question': '...'}}")
        inputs: dict[str, Any] = {}
        for key, kind in self.inputs.items():
            value = given.get(key)
            if value is None:
                continue
            if kind in CHECKS and (not isinstance(value, CHECKS[kind]) or (
                    kind != "boolean" and isinstance(value, bool))):
                raise HarnessInputError(f"harness input `{key}` must be a JSON {kind}, got "
                                        f"{type(value).__name__} (it takes: {takes})")
            inputs[key] = value
        if self.with_fields and isinstance(given.get("fields"), dict):
            inputs = {**given["fields"], **inputs}
        return inputs

    def tool_schema(self) -> type[BaseModel]:
        """The inputs as a pydantic model, for `as_tool`."""
        from pydantic import create_model

        fields: dict[str, Any] = {"question": (str, ...)}
        for key, kind in self.inputs.items():
            if key != "question":
                kind_type = JSON_TYPES.get(kind or "", Any)
                fields[key] = (kind_type if kind_type is Any else kind_type | None, None)
        return create_model("HarnessInput", **fields)


def settle(run: MirrorRun, done: concurrent.futures.Future) -> None:
    """Hand the sandbox's outcome to the run, then release whatever still waits on it."""
    if done.cancelled():
        outcome = ProblemResult(error="the caller stopped the run", error_kind=ErrorKind.TIMEOUT)
    elif done.exception() is not None:
        outcome = ProblemResult(error=str(done.exception()), error_kind=ErrorKind.INFRA)
    else:
        outcome = done.result()
    run.result.set_result(outcome)
    run.finished()


def served_graph(runner: HarnessRunner, name: str, version: str, with_fields: bool,
                 finish: Finish) -> ServedHarness:
    """The mirror of `runner`'s harness, compiled; `finish(outcome)` gives the output."""
    shape = runner.shape()
    served = Served(runner, shape, version, input_types(shape), with_fields)
    state = state_schema(shape, served)
    # The output is the whole state: a server streams only output keys, and the harness's
    # own keys are what shows it working node by node.
    graph = mirror_graph(shape, state, input_schema(served), state, finish)
    compiled = graph.compile(name=name)
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return ServedHarness(**attrs, harness=served)


def input_types(shape: GraphShape) -> dict[str, str | None]:
    props = shape.input_schema.get("properties")
    props = props if isinstance(props, dict) else {}
    types: dict[str, str | None] = {"question": "string"}
    for key, spec in props.items():
        if isinstance(key, str) and NAME.match(key) and key not in NOT_INPUTS:
            kind = spec.get("type") if isinstance(spec, dict) else None
            types.setdefault(key, kind if kind in CHECKS else None)
    return types


def input_schema(served: Served) -> type:
    fields: dict[str, Any] = {"question": Required[str]}
    for key, kind in served.inputs.items():
        if key != "question":
            fields[key] = NotRequired[JSON_TYPES.get(kind or "", Any)]
    if served.with_fields:
        fields["fields"] = NotRequired[dict[str, Any]]
    return TypedDict("HarnessInput", fields)  # type: ignore[operator]


def state_schema(shape: GraphShape, served: Served) -> type:
    """The served graph's state: the harness's keys (each taking the sandbox's value as it
    is) and the output's."""
    keys: dict[str, Any] = {"question": str, "answer": str, "calls": list[dict[str, Any]],
                            "latency_s": float, "version": str}
    if served.with_fields:
        keys["fields"] = dict[str, Any]
    for key in shape.state:
        if key not in keys and key not in RESERVED:
            keys[key] = JSON_TYPES.get(served.inputs.get(key) or "", Any)
    # Optional: a mirror channel starts empty, as the harness's own do, until a node writes
    keys = {key: Annotated[kind if kind is Any else kind | None, newest]
            for key, kind in keys.items()}
    return TypedDict("HarnessState", keys, total=False)  # type: ignore[operator]


__all__ = ["HarnessInputError", "HarnessOutput", "Served", "served_graph"]
