"""A stored run config's values checked against `AdaptConfig`'s field types before use.

config.json is read back by every later command (`resume`, `approve`, `eval`, `show`, Studio)
and may have been edited or handed over. `AdaptConfig` takes any value its constructor is
given, so a wrong type (`"rounds": "5"`, `"budget": [1]`) would fail far away, in a node or a
format string, as a traceback. `check_types` refuses it first, in one line naming the file and
the key (`harnesses.store.fields`: the fields' own annotations, so a new field is checked
without a change here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_learning.harnesses.store.fields import wrong_field


class StoredConfigError(ValueError):
    """A stored run config holding a value of the wrong type."""

    hint = ("config.json is written by `harness-learn adapt` and read as written: restore it "
            "(or drop the key for its default), or start a new --run-dir")


def check_types(cls: type, data: dict[str, Any], where: str | Path) -> None:
    """`StoredConfigError` naming `where` and the first key of `data` whose value `cls`'s
    field of that name cannot hold (unknown keys are the caller's to refuse)."""
    wrong = wrong_field(cls, data)
    if wrong:
        raise StoredConfigError(f"{where}: unreadable run config: {wrong}")
