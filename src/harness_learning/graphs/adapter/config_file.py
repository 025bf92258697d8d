"""A run's settings from a TOML file (`adapt --config FILE.toml`, `resume --config`, `studio
--settings`). Its keys are `AdaptConfig`'s field names and their types the fields' own, read
from `dataclasses.fields(AdaptConfig)` like the CLI's options and Studio's form, so a new
field is a new key with nothing else to write:

    task = "rg:basic_arithmetic"
    run_dir = "runs/arith"
    rounds = 2
    task_options = { n_dev = 6, n_test = 2 }
    [budget]
    solver_calls = 500

A key the dataclass does not have, or a value of the wrong type, is refused as one error that
names the key and the file, with a hint (the closest key; a flag's field), before anything is
written: a typo must not silently run the defaults. A flag's name is taken for its field's key
(`harness` for `seed_harness`). Relative paths in the file (`run_dir`, a data file, the harness,
a `file.py:attr` metric or tool, `describe = "@notes.md"`, `aliases`, `task_options`' `path` and
`index_dir`) are read against the file's folder, not the working directory: `studio` serves
from elsewhere, and a file's meaning must not depend on where a command was started.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal

from harness_learning.graphs.adapter.config import AdaptConfig

HINT = "a key is the field behind one of `harness-learn adapt --help`'s flags"


class ConfigFileError(ValueError):
    """A settings file that cannot be used: its message names the file (and the key), and
    `hint` says what to write instead."""

    def __init__(self, message: str, hint: str = HINT) -> None:
        super().__init__(message)
        self.hint = hint


def read_config_file(path: str | Path, cls: type = AdaptConfig) -> dict[str, Any]:
    """The file's settings, keyed by field name, checked against `cls`'s fields; tables of a
    dataclass field (`budget`, `race`) stay tables. Raises `ConfigFileError`."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigFileError(f"config file {path} not found", "check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"config file {path}: unreadable: {exc}", "check the path") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}",
                              "see https://toml.io for the syntax") from exc
    data = _aliased(data, cls, path)
    _check_table(data, cls, path, prefix="")
    return against_folder(data, path.resolve().parent)


def _aliased(data: dict[str, Any], cls: type, path: Path) -> dict[str, Any]:
    """The file's keys with a flag's name (`harness`) read as its field's (`seed_harness`);
    both at once is refused, since one would silently lose."""
    out = dict(data)
    for f in dataclasses.fields(cls):
        flag = f.metadata.get("flag")
        if flag and flag != f.name and flag in out:
            if f.name in out:
                raise ConfigFileError(f"{path}: keys {flag!r} and {f.name!r} both set one "
                                      "setting", f"keep one of them ({flag!r} is {f.name!r})")
            out[f.name] = out.pop(flag)
    return out


PATH_KEYS = ("run_dir", "aliases")
"""Keys whose value is always a path."""
PATH_OPTIONS = ("path", "index_dir")
"""`task_options` keys whose value is a path."""


def against_folder(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`data` with every relative path it names made absolute against `folder` (the settings
    file's own): the harness file, a data-file task, `file.py:attr` references (task class,
    metric, tools), `@file` descriptions, run_dir, aliases and the task's path options. Seed
    names, registered tasks, `module:attr` and `mcp:` references are left as written."""
    from harness_learning.evals.custom.datafile import is_data_path
    from harness_learning.harnesses.seeds import SEEDS

    def at(text: str) -> str:
        path = Path(text).expanduser()
        return text if path.is_absolute() else str(folder / path)

    def ref(text: str) -> str:
        module, colon, attr = text.rpartition(":")
        if colon and module.endswith(".py"):
            return f"{at(module)}:{attr}"
        return at(text) if is_data_path(str(folder / text)) else text

    out = dict(data)
    for key in PATH_KEYS:
        if isinstance(out.get(key), str):
            out[key] = at(out[key])
    harness = out.get("seed_harness")
    if isinstance(harness, str) and harness not in SEEDS and "\n" not in harness:
        out["seed_harness"] = at(harness)
    for key in ("task", "metric"):
        if isinstance(out.get(key), str):
            out[key] = ref(out[key])
    if isinstance(out.get("tools"), list):
        out["tools"] = [ref(t) if isinstance(t, str) else t for t in out["tools"]]
    if isinstance(out.get("describe"), str) and out["describe"].startswith("@"):
        out["describe"] = "@" + at(out["describe"][1:])
    if isinstance(out.get("task_options"), dict):
        out["task_options"] = {k: at(v) if k in PATH_OPTIONS and isinstance(v, str) else v
                               for k, v in out["task_options"].items()}
    return out


def _check_table(data: dict[str, Any], cls: type, path: Path, prefix: str) -> None:
    """Every key of `data` is a field of `cls` and holds a value of its type."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        name = prefix + key
        if key not in known:
            raise ConfigFileError(f"{path}: unknown key {name!r}",
                                  _unknown_hint(key, cls, prefix))
        hint = _unwrap(hints[key])
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            _check_table(value, hint, path, prefix=f"{name}.")
            _build(hint, value, name, path)
            continue
        expected = _mismatch(value, hint)
        if expected:
            raise ConfigFileError(
                f"{path}: key {name!r} must be {expected}, not {_kind(value)} ({value!r})",
                f"{name}: {known[key].metadata.get('help', '') or HINT}")


def _unknown_hint(key: str, cls: type, prefix: str) -> str:
    """The closest field; for a flag's name (`harness`, `dev`), the field it sets."""
    for f in dataclasses.fields(cls):
        if key == f.metadata.get("flag"):
            return f"the flag --{key.replace('_', '-')} is the key {f.name!r}"
        for part in f.metadata.get("parts") or ():
            if key == part.option:
                return (f"the flag --{key.replace('_', '-')} is the key {part.key!r} of "
                        f"{f.name!r}: {f.name} = {{ {part.key} = ... }}")
    close = difflib.get_close_matches(key, [f.name for f in dataclasses.fields(cls)], n=1)
    return f"did you mean {prefix + close[0]!r}? {HINT}" if close else HINT


def _build(cls: type, value: dict[str, Any], name: str, path: Path) -> Any:
    """The dataclass a table describes (its own checks, e.g. a race rule's fractions)."""
    try:
        return to_dataclass(cls, value)
    except (TypeError, ValueError) as exc:
        raise ConfigFileError(f"{path}: key {name!r}: {exc}") from exc


def to_dataclass(cls: type, value: Any) -> Any:
    """A dataclass field's value from its table (`from_dict` where the class has one)."""
    if not isinstance(value, dict):
        return value
    from_dict = getattr(cls, "from_dict", None)
    return from_dict(value) if from_dict is not None else cls(**value)


def field_objects(values: dict[str, Any], cls: type = AdaptConfig) -> dict[str, Any]:
    """`cls(**...)` keyword arguments from a file's values (a dataclass field's table built)."""
    hints = typing.get_type_hints(cls)
    return {k: to_dataclass(_unwrap(hints[k]), v) if dataclasses.is_dataclass(_unwrap(hints[k]))
            else v for k, v in values.items()}


def over_file(values: dict[str, Any], file_values: dict[str, Any], given: dict[str, Any],
              cls: type = AdaptConfig) -> dict[str, Any]:
    """`values` (`cls(**...)` arguments) with a settings file's values put under the options
    that were `given` explicitly (option or setting name -> value): defaults < file < given.
    A part (`--dev 40`, Studio's `dev`) sets its key in the file's table, keeping its others."""
    hints = typing.get_type_hints(cls)
    merged = dict(values)
    for f in dataclasses.fields(cls):
        if f.name not in file_values:
            continue
        inner = _unwrap(hints[f.name])
        from_file = to_dataclass(inner, file_values[f.name]) if dataclasses.is_dataclass(inner) \
            else file_values[f.name]
        parts = f.metadata.get("parts") or ()
        if parts:
            typed = {p.key: _plain(given[p.option]) for p in parts if p.option in given}
            merged[f.name] = (dataclasses.replace(from_file, **typed)
                              if dataclasses.is_dataclass(from_file) else {**from_file, **typed})
        elif f.name not in given and f.metadata.get("flag") not in given:
            merged[f.name] = from_file
    return merged


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def disagreements(values: dict[str, Any], stored: AdaptConfig) -> list[str]:
    """The file's settings a started run holds otherwise (`name: file != stored`), compared as
    `adapt` stored them: a `describe = "@notes.md"` as the file's text, a dict on the keys the
    file gives (not a run's derived `split_secret`)."""
    from harness_learning.graphs.adapter.inputs import resolve_inputs
    from harness_learning.graphs.adapter.settings import differences

    resolved, _ = resolve_inputs(dataclasses.replace(stored, **field_objects(values)))
    return differences({k: getattr(resolved, k) for k in values}, stored)


def _unwrap(hint: Any) -> Any:
    """The type inside `X | None` (TOML has no null: a key left out is the default)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _mismatch(value: Any, hint: Any) -> str | None:
    """What `hint` wants, in words, when `value` is not one; None when it is."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        return None if value in choices else "one of " + ", ".join(map(repr, choices))
    if origin in (list, tuple):
        item = _unwrap(typing.get_args(hint)[0]) if typing.get_args(hint) else Any
        if not isinstance(value, list):
            return f"an array of {_plural(item)}"
        bad = next((v for v in value if _mismatch(v, item)), None)
        return None if bad is None else f"an array of {_plural(item)}"
    if origin is dict or hint is dict:
        return None if isinstance(value, dict) else "a table"
    if dataclasses.is_dataclass(hint):
        return "a table"
    if hint is Any:
        return None
    if hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is Path:
        ok = isinstance(value, str)
    else:
        ok = isinstance(value, hint)
    return None if ok else _name(hint)


def _name(hint: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false",
            Path: "a path (a string)", Any: "values"}.get(hint, f"a {getattr(hint, '__name__', hint)}")


def _plural(hint: Any) -> str:
    return {str: "strings", int: "integers", float: "numbers", bool: "booleans"}.get(
        hint, "values")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


__all__ = ["ConfigFileError", "disagreements", "field_objects", "over_file",
           "read_config_file", "to_dataclass"]
