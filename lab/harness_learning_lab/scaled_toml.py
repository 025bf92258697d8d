"""The one reader of the lab's TOML files with scales. Top-level keys are the full setting; a
table named after a scale overrides them at that scale, a nested table key by key, and an
empty one (`task_configs = {}`) clearing the top level's. Both
experiments/*.toml (`[paper]`, `[smoke]`) and experiments/peers/bench.toml (`[cpu]`, `[racing]`,
`[qwen]`, `[smoke]`, and a scale's own `[SCALE.smoke]`) are read this way."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The file's tables, or one line naming the file: missing, or not valid TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path} not found") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML: {err}") from None


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`; where both hold a table, merged key by key, unless `over`'s is
    empty: that says "none of the top level's"."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and value and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def at_scale(data: dict[str, Any], scales: Sequence[str], scale: str | None, path: Path,
             *, required: bool = True) -> dict[str, Any]:
    """`data` without its scale tables, with the table of `scale` merged over it (None: the
    top level alone). A scale without a table is one line naming the file and the tables it
    has, unless not `required` (then the top level stands for it)."""
    tables = {s: data[s] for s in scales if isinstance(data.get(s), dict)}
    base = {k: v for k, v in data.items() if k not in scales}
    if scale is None:
        return base
    if scale not in tables:
        if not required:
            return base
        raise ValueError(f"{path} has no [{scale}] table (it has: {', '.join(tables) or 'none'})")
    return merge(base, tables[scale])
