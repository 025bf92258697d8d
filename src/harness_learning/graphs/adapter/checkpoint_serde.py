"""The adapter's checkpoint serializer: a checkpoint is data, never code.

LangGraph's `JsonPlusSerializer` revives the objects a checkpoint names by module and name,
and by default it imports and calls any callable so named. A run directory is a thing people
hand each other, so a crafted checkpoints.sqlite (or a PostgreSQL schema) would run code on
`resume`, `approve` or `show --candidate`. `CheckpointSerializer` reads only the encodings it
writes itself (msgpack, null, bytes) and, before anything is imported, lists every type a
msgpack value names: one outside `ALLOWED` (plus what LangGraph derives from the adapter's own
state schema) refuses the whole checkpoint with one line naming where it is kept
(`CheckpointRefused`), rather than reading it half: a value silently left raw could steer a
resumed run.

The adapter's state is plain dicts, lists, strings and numbers; `ALLOWED` is what LangGraph
itself writes around them (an interrupt for the approval gate, a command answering it) and a
few standard value types.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
)

from harness_learning.harnesses.store import LogStoreError

ALLOWED: frozenset[tuple[str, ...]] = frozenset({
    ("langgraph.types", "Interrupt"),
    ("langgraph.types", "Command"),
    ("langgraph.types", "Send"),
    ("langgraph.types", "Overwrite"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("collections", "deque"),
    ("datetime", "date"),
    ("datetime", "datetime"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("datetime", "datetime", "fromisoformat"),
    ("decimal", "Decimal"),
    ("uuid", "UUID"),
    ("pathlib", "Path"),
    ("pathlib", "PosixPath"),
    ("pathlib._local", "Path"),
    ("pathlib._local", "PosixPath"),
})
"""(module, name) of every type a checkpoint may revive; (module, name, method) of a method."""
WRITTEN = ("msgpack", "null", "bytes", "bytearray")
"""The encodings `JsonPlusSerializer.dumps_typed` writes without its pickle fallback."""
NAMED = (EXT_CONSTRUCTOR_SINGLE_ARG, EXT_CONSTRUCTOR_POS_ARGS, EXT_CONSTRUCTOR_KW_ARGS,
         EXT_METHOD_SINGLE_ARG, EXT_PYDANTIC_V1, EXT_PYDANTIC_V2)
"""msgpack extension codes whose payload starts with (module, name)."""
HINT = ("this run's checkpoints were not written by harness-learning's adapter (or were "
        "altered): do not resume or approve it; `harness-learn show RUN --store ...` still "
        "reads its log, and a new --run-dir starts afresh")


class CheckpointRefused(LogStoreError):
    """A checkpoint naming a type the adapter never stores (or not readable at all)."""

    hint = HINT


class CheckpointSerializer(JsonPlusSerializer):
    """`JsonPlusSerializer` limited to `ALLOWED`, refusing (not skipping) anything else.
    `where`: the checkpoints' file or schema, for the refusal's one line."""

    def __init__(self, where: str) -> None:
        super().__init__(pickle_fallback=False, allowed_json_modules=None,
                         allowed_msgpack_modules=tuple(ALLOWED))
        self.where = where

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if kind not in WRITTEN:
            raise CheckpointRefused(f"{self.where}: a checkpoint value is encoded as {kind!r}, "
                                    "which the adapter never writes; refused unread")
        if kind == "msgpack":
            allowed = self._allowed_msgpack_modules
            for name in names_in(blob, self.where):
                if not isinstance(allowed, set) or name not in allowed:
                    raise CheckpointRefused(
                        f"{self.where}: a checkpoint names {'.'.join(name)}, which is not one "
                        "of the adapter's own types; refused unread (a checkpoint may name "
                        "data types only, never code to run)")
        return super().loads_typed(data)


def names_in(blob: bytes, where: str) -> list[tuple[str, ...]]:
    """Every (module, name[, method]) a msgpack value names, found without importing or
    calling anything; an extension the adapter never writes is named by its code."""
    found: list[tuple[str, ...]] = []

    def hook(code: int, payload: bytes) -> None:
        try:
            inner = ormsgpack.unpackb(payload, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        except Exception:  # noqa: BLE001 - malformed: named so, and refused by the caller
            found.append(("<unreadable msgpack extension>", str(code)))
            return
        if code == EXT_DELTA_SNAPSHOT:
            return
        if code not in NAMED or not isinstance(inner, list | tuple) or len(inner) < 2:
            found.append(("<msgpack extension>", str(code)))
            return
        name = (str(inner[0]), str(inner[1]))
        if code == EXT_METHOD_SINGLE_ARG:
            name += (str(inner[3]) if len(inner) > 3 else "?",)
        found.append(name)

    try:
        ormsgpack.unpackb(blob, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    except Exception as exc:  # noqa: BLE001 - any decoder error is the checkpoint's fault
        raise CheckpointRefused(f"{where}: a checkpoint value is not readable msgpack "
                                f"({type(exc).__name__}); refused") from exc
    return found
