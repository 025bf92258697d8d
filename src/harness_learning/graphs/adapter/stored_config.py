"""A stored run config's values checked against `AdaptConfig`'s field types before use.

config.json is read back by every later command (`resume`, `approve`, `eval`, `show`, Studio)
and may have been edited or handed over. A wrong type (`"rounds": "5"`, `"budget": [1]`) is
refused first, in one line naming the file and the key, in the words of a stored record's check
(`harnesses.store.fields.mismatch`), against the model's own annotations, so a new field is
checked without a change here.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness_learning.harnesses.store.fields import mismatch


class StoredConfigError(ValueError):
    """A stored run config holding a value of the wrong type."""

    hint = ("config.json is written by `harness-learn adapt` and read as written: restore it "
            "(or drop the key for its default), or start a new --run-dir")


def check_types(cls: type, data: dict[str, Any], where: str | Path) -> None:
    """`StoredConfigError` naming `where` and the first key of `data` whose value `cls`'s
    field of that name cannot hold (unknown keys are the caller's to refuse)."""
    wrong = wrong_value(cls, data)
    if wrong:
        raise StoredConfigError(f"{where}: unreadable run config: {wrong}")


def wrong_value(cls: type[BaseModel], data: dict[str, Any], prefix: str = "") -> str:
    """Why the first of `data`'s values that `cls`'s field of that name cannot hold does not
    fit (a nested model's table checked key by key), or "" if all fit."""
    hints = typing.get_type_hints(cls)
    for name in cls.model_fields:
        if name not in data:
            continue
        value, hint, key = data[name], hints[name], prefix + name
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            wrong = (wrong_value(hint, value, f"{key}.") if isinstance(value, dict)
                     else mismatch(value, dict, key))
        else:
            wrong = mismatch(value, hint, key)
        if wrong:
            return wrong
    return ""
