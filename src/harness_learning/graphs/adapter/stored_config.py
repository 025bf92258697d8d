"""A stored run config's values checked against `AdaptConfig`'s field types before use.

config.json is read back by every later command (`resume`, `approve`, `eval`, `show`, Studio)
and may have been edited or handed over. `AdaptConfig` takes any value its constructor is
given, so a wrong type (`"rounds": "5"`, `"budget": [1]`) would fail far away, in a node or a
format string, as a traceback. `check_types` refuses it first, in one line naming the file and
the key. It reads the fields' own annotations, so a new field is checked without a change here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal


class StoredConfigError(ValueError):
    """A stored run config holding a value of the wrong type."""

    hint = ("config.json is written by `harness-learn adapt` and read as written: restore it "
            "(or drop the key for its default), or start a new --run-dir")


def check_types(cls: type, data: dict[str, Any], where: str | Path) -> None:
    """`StoredConfigError` naming `where` and the first key of `data` whose value `cls`'s
    field of that name cannot hold (unknown keys are the caller's to refuse)."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name not in data:
            continue
        value = data[field.name]
        wrong = _mismatch(value, hints[field.name], field.name)
        if wrong:
            raise StoredConfigError(f"{where}: unreadable run config: {wrong}")


def _mismatch(value: Any, hint: Any, key: str) -> str:
    """Why `value` does not fit `hint` ("" if it does), naming `key`."""
    if _fits(value, hint):
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return _nested(value, hint, key)
        return ""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{key} is {shown}, not {_describe(hint)}"


def _nested(value: dict[str, Any], cls: type, key: str) -> str:
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name in value:
            wrong = _mismatch(value[field.name], hints[field.name], f"{key}.{field.name}")
            if wrong:
                return wrong
    return ""


def _fits(value: Any, hint: Any) -> bool:  # noqa: PLR0911 - one case per kind of annotation
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if hint is type(None) or hint is None:
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin is Literal:
        return value in args
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint in (str, Path):
        return isinstance(value, str)
    if origin in (list, tuple) or hint in (list, tuple):
        return isinstance(value, list | tuple) and _fits_items(value, origin, args)
    if origin is dict or hint is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value) and (
            len(args) < 2 or all(_fits(v, args[1]) for v in value.values()))
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    return True  # an annotation this check does not know: left to the constructor


def _fits_items(value: list | tuple, origin: Any, args: tuple) -> bool:
    """The items of a JSON list against list[X], tuple[X, ...] or tuple[X, Y]."""
    inner = [a for a in args if a is not Ellipsis]
    if not inner:
        return True
    if origin is list or len(inner) == 1:
        return all(_fits(v, inner[0]) for v in value)
    return len(inner) == len(value) and all(_fits(v, t) for v, t in zip(value, inner, strict=True))


def _describe(hint: Any) -> str:
    """An annotation as a person reads it: `an integer or null`, `one of 'a', 'b'`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
             Path: "a string", type(None): "null"}
    if hint in names:
        return names[hint]
    if origin in (list, tuple) or hint in (list, tuple):
        return "a list" + (f" of {_describe(args[0])}" if args and origin is list else "")
    if origin is dict or hint is dict or dataclasses.is_dataclass(hint):
        return "a JSON object"
    return str(hint)
