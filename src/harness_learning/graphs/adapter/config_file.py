"""A run's settings from a TOML file (`adapt --config FILE.toml`, `resume --config`, `studio
--settings`), and the one error format of every settings surface (flags, file, Studio).

The file is `AdaptConfig.partial()` validated (strictly: TOML's own types, no "2" for 2), so
its keys are the settings' names and their types and checks the fields' own, and a new field
is a new key with nothing else to write:

    task = "rg:basic_arithmetic"
    run_dir = "runs/arith"
    rounds = 2
    task_options = { n_dev = 6, n_test = 2 }
    [budget]
    solver_calls = 500

A key the model does not have, or a value it refuses, is one error that names the key and the
file, with a hint (the closest key; the key a flag's part sets; the field's help), before
anything is written: a typo must not silently run the defaults. Relative paths in the file
are read against the file's folder (the fields say which values are paths:
`graphs.adapter.setting_kinds`).
"""

from __future__ import annotations

import difflib
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ValidationError

from harness_learning.graphs.adapter.config import AdaptConfig, setting_name
from harness_learning.graphs.adapter.setting_kinds import parts_of

HINT = "a key is the field behind one of `harness-learn adapt --help`'s flags"
FORM_HINT = "the settings are the adapter's form"
"""The general hint of a Studio setting (its form's fields are the settings)."""


class ConfigFileError(ValueError):
    """A setting that cannot be used: its message names where (the file, the key or flag), and
    `hint` says what to write instead."""

    def __init__(self, message: str, hint: str = HINT) -> None:
        super().__init__(message)
        self.hint = hint


SettingError = ConfigFileError
"""The one error of every settings surface (a flag, a file's key, a Studio setting)."""


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The file's settings, keyed by field name (`seed_harness` for `harness`), checked by
    the model, relative paths made absolute. Raises `ConfigFileError`."""
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
    return settings_values(data, f"{path}: ", folder=path.resolve().parent)


def settings_values(data: dict[str, Any], where: str = "", folder: Path | None = None,
                    style: str = "key") -> dict[str, Any]:
    """`data` (setting name or field name -> value, as a file or a request gives them)
    validated strictly by `AdaptConfig.partial()`: the values given, keyed by field name, in
    the fields' order (a nested model's value knows which of its keys were given:
    `model_fields_set`). Raises `ConfigFileError` in the one format, naming `where`."""
    one_name(data, where)
    partial = AdaptConfig.partial()
    try:
        text = json.dumps(data, default=str)
        model = partial.model_validate_json(text, strict=True,
                                            context={"folder": folder} if folder else None)
    except ValidationError as exc:
        raise setting_error(exc, where, style) from None
    names = {setting_name(name): name for name in AdaptConfig.model_fields}
    return {names[k]: getattr(model, k) for k in partial.model_fields
            if k in model.model_fields_set}


def one_name(data: dict[str, Any], where: str = "") -> None:
    """A setting given under both its names (`harness` and `seed_harness`) is refused: one
    would silently lose."""
    for name, info in AdaptConfig.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            given = [c for c in alias.choices if c in data]
            if len(given) > 1:
                raise ConfigFileError(f"{where}keys {given[0]!r} and {given[1]!r} both set one "
                                      "setting", f"keep one of them ({given[1]!r} is "
                                      f"{setting_name(name)!r})")


WORDS = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
         "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
         "bool_type": "true or false", "bool_parsing": "true or false",
         "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table",
         "list_type": "an array", "tuple_type": "an array"}
"""What a value must be, by pydantic's error type."""


def setting_error(exc: ValidationError, where: str = "", style: str = "key") -> ConfigFileError:
    """The first of `exc`'s errors as one line naming the setting (`style`: "key" of a file,
    "flag" of the command line, "setting" of Studio's form) with a hint."""
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"]]
    name, value, kind = ".".join(loc), error.get("input"), error["type"]
    said = _named(loc, style)
    if kind == "extra_forbidden":
        return ConfigFileError(f"{where}unknown {style} {said}", _unknown_hint(loc, style))
    label = said if style == "flag" else f"{style} {said}"
    hint = f"{name}: {_help(loc) or HINT}"
    if kind == "literal_error":
        return ConfigFileError(f"{where}{label} must be one of {error['ctx']['expected']}, "
                               f"not {value!r}", hint)
    if kind in WORDS:
        return ConfigFileError(f"{where}{label} must be {WORDS[kind]}, not {_kind(value)} "
                               f"({value!r})", hint)
    message = str(error["msg"]).removeprefix("Value error, ")
    got = "" if kind == "value_error" else f" (got {value!r})"  # its own message names it
    return ConfigFileError(f"{where}{label}: {message}{got}", hint)


def _named(loc: list[str], style: str) -> str:
    """A setting as `style` names it: `'budget.tokens'`, or the flag `--max-tokens`."""
    if style != "flag":
        return repr(".".join(loc))
    info = AdaptConfig.model_fields.get(loc[0])
    part = next((p for p in parts_of(info) if len(loc) > 1 and p.key == loc[1]), None)
    flag = part.option if part else setting_name(loc[0]) if info else loc[0]
    return "--" + flag.replace("_", "-")


def _model_at(loc: list[str]) -> type[BaseModel]:
    """The model holding the last key of `loc` (AdaptConfig, or a nested one)."""
    model: type[BaseModel] = AdaptConfig
    for key in loc[:-1]:
        info = model.model_fields.get(key) or model.model_fields.get(_field_of(key))
        inner = getattr(info, "annotation", None)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            break
        model = inner
    return model


def _field_of(key: str) -> str:
    return {setting_name(n): n for n in AdaptConfig.model_fields}.get(key, key)


def _help(loc: list[str]) -> str:
    model = _model_at(loc)
    info = model.model_fields.get(_field_of(loc[-1])) if model is AdaptConfig else \
        model.model_fields.get(loc[-1])
    return (info.description or "") if info is not None else ""


def _unknown_hint(loc: list[str], style: str) -> str:
    """The closest key; for a flag's part (`dev`), the key of the field it sets."""
    key, prefix = loc[-1], "".join(f"{k}." for k in loc[:-1])
    if len(loc) == 1:
        for name, info in AdaptConfig.model_fields.items():
            for part in parts_of(info):
                if key == part.option:
                    return (f"the flag --{key.replace('_', '-')} is the key {part.key!r} of "
                            f"{name!r}: {name} = {{ {part.key} = ... }}")
    model = _model_at(loc)
    names = [setting_name(n) for n in model.model_fields] if model is AdaptConfig \
        else list(model.model_fields)
    return closest_hint(key, names, HINT if style != "setting" else FORM_HINT, prefix)


def closest_hint(key: str, names: list[str], general: str, prefix: str = "") -> str:
    """`did you mean 'rounds'? <general>` for the name closest to `key`, else `general`."""
    close = difflib.get_close_matches(key, names, n=1)
    return f"did you mean {prefix + close[0]!r}? {general}" if close else general


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


def over_file(values: dict[str, Any], file_values: dict[str, Any],
              given: dict[str, Any]) -> dict[str, Any]:
    """`values` (`AdaptConfig(**...)` arguments) with a settings file's values put under the
    options that were `given` explicitly (option or setting name -> value): defaults < file <
    given. A part (`--dev 40`, Studio's `dev`) sets its key in the file's table, keeping its
    others."""
    merged = dict(values)
    for name, from_file in file_values.items():
        parts = parts_of(AdaptConfig.model_fields[name])
        if parts:
            typed = {p.key: _plain(given[p.option]) for p in parts if p.option in given}
            merged[name] = {**_table(from_file), **typed}
        elif name not in given and setting_name(name) not in given:
            merged[name] = from_file
    return merged


def _table(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    return value.model_dump(exclude_unset=True) if isinstance(value, BaseModel) else dict(value)


def _plain(value: object) -> object:
    return str(value) if isinstance(value, Path) else value


def disagreements(values: dict[str, Any], stored: AdaptConfig) -> list[str]:
    """The file's settings a started run holds otherwise (`name: file != stored`), compared as
    `adapt` stored them: a `describe = "@notes.md"` as the file's text, a dict on the keys the
    file gives (not a run's derived `split_secret`)."""
    from harness_learning.graphs.adapter.inputs import resolve_inputs

    resolved, _ = resolve_inputs(stored.replace(**values))
    return differences({k: getattr(resolved, k) for k in values}, stored)


def differences(wanted: dict[str, Any], stored: AdaptConfig) -> list[str]:
    """The fields of `wanted` (field name -> value) that `stored` holds otherwise, as
    `name: wanted != stored`; a dict is compared on the keys `wanted` gives."""
    stored_values = stored.model_dump()
    out = []
    for name, value in wanted.items():
        if isinstance(value, BaseModel):
            value = value.model_dump()
        have = stored_values.get(name)
        if name == "run_dir":
            same = Path(str(value)).expanduser().resolve() == Path(str(have)).resolve()
        elif isinstance(value, dict) and isinstance(have, dict):
            value = {k: v for k, v in value.items() if v is not None}
            have = {k: have.get(k) for k in value}  # only what was given (not split_secret)
            same = all(_same(have[k], v) for k, v in value.items())
        else:
            same = _same(have, value)
        if not same:
            out.append(f"{name}: {value!r} != {have!r}")
    return out


def _same(have: object, value: object) -> bool:
    if isinstance(have, tuple | list) and isinstance(value, tuple | list):
        return list(have) == list(value)
    return have == value or str(have) == str(value)


__all__ = ["ConfigFileError", "SettingError", "differences", "disagreements", "over_file", "read_config_file",
           "setting_error", "settings_values"]
