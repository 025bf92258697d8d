"""Stored values checked against the annotations of the dataclass they fill, before use.

What a run directory holds (config.json, the log's records) is read back by later commands and
may have been damaged, edited or crafted by whoever handed the directory over. A dataclass takes
any value its constructor is given, so a wrong type (`"rounds": "5"`, a score stored as text)
would fail far from where it was read, as a traceback. `wrong_field` names the first value that
does not fit its field, for a caller to refuse in one line naming the file. It reads the fields'
own annotations, so a new field is checked without a change here; an annotation it does not
know is left to the constructor.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Any, Literal


def wrong_field(cls: type, data: dict[str, Any], prefix: str = "") -> str:
    """Why the first of `data`'s values that `cls`'s field of that name cannot hold does not
    fit ("{key} is {value}, not {what}"), or "" if all fit. Keys that are no field are left
    to the caller."""
    hints = _hints(cls)
    for field in dataclasses.fields(cls):
        if field.name in data:
            wrong = mismatch(data[field.name], hints[field.name], prefix + field.name)
            if wrong:
                return wrong
    return ""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def mismatch(value: Any, hint: object, key: str) -> str:
    """Why `value` does not fit `hint` ("" if it does), naming `key`."""
    if _fits(value, hint):
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return _nested(value, hint, key)
        return ""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{key} is {shown}, not {_describe(hint)}"


def _nested(value: dict[str, Any], cls: type, key: str) -> str:
    return wrong_field(cls, value, f"{key}.")


def _fits(value: object, hint: object) -> bool:  # noqa: PLR0911 - one case per kind of annotation
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


def _fits_items(value: list | tuple, origin: object, args: tuple) -> bool:
    """The items of a JSON list against list[X], tuple[X, ...] or tuple[X, Y]."""
    inner = [a for a in args if a is not Ellipsis]
    if not inner:
        return True
    if origin is list or len(inner) == 1:
        return all(_fits(v, inner[0]) for v in value)
    return len(inner) == len(value) and all(_fits(v, t) for v, t in zip(value, inner, strict=True))


def _describe(hint: object) -> str:
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
