"""The adapter's settings as a typed schema: LangGraph's `context_schema`, so Studio shows a
settings form and the SDK takes `context={...}`. Generated from `AdaptConfig`'s fields and help
texts, like `harness-learn adapt`'s options (`graphs/cli/options.py`): a field is one setting
(`seed_harness` under its flag's name, `harness`), a structured field also one setting per
`Part` (`dev`, `test`, `data`, `max_solver_calls`, ...). A setting left unset (None) keeps the
field's default, or the track's for the knobs the paper fixes per track.

Settings describe a run when it starts; the run directory then holds them (config.json), so a
thread is resumed and read without repeating them (see `graphs.adapter.server_threads`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from harness_learning.graphs.adapter.config import AdaptConfig, Budget
from harness_learning.graphs.adapter.racing import RaceRule

DEFAULT_TASK = "rg:basic_arithmetic"
"""The task of a thread whose settings name none: quick, and needs no data files."""


def _unwrap(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _plain_type(hint: Any) -> Any:
    """The JSON-friendly type of a setting (paths are strings, dataclasses JSON objects)."""
    inner = _unwrap(hint)
    if inner is Path:
        return str
    if dataclasses.is_dataclass(inner) or typing.get_origin(inner) is dict:
        return dict[str, Any]
    return inner


def _shown_default(f: dataclasses.Field) -> Any:
    """The default the form shows: the field's own when it is a plain value, else None."""
    if f.name == "task":
        return DEFAULT_TASK
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
        return value if isinstance(value, dict | list) else None
    return None


def _setting_specs() -> dict[str, tuple[Any, Any]]:
    """name -> (type, pydantic Field) for every setting, in AdaptConfig's order."""
    hints = typing.get_type_hints(AdaptConfig)
    specs: dict[str, tuple[Any, Any]] = {}
    for f in dataclasses.fields(AdaptConfig):
        help_text = f.metadata.get("help", "")
        inner = _unwrap(hints[f.name])
        parts = f.metadata.get("parts") or ()
        if f.name == "run_dir":
            help_text += " Default: a directory of its own per thread, outside the source tree."
        if not (parts and dataclasses.is_dataclass(inner)):  # a dataclass with parts: parts only
            name = f.metadata.get("flag") or f.name
            specs[name] = (_plain_type(hints[f.name]) | None,
                           Field(_shown_default(f), description=help_text))
        for part in parts:
            specs[part.option] = (_plain_type(part.type) | None, Field(None, description=part.help))
    return specs


AdapterSettings: type[BaseModel] = create_model(
    "AdapterSettings",
    # extra="allow": a key the form does not have is kept, so `given_settings` can refuse it
    # by name (ignored, a typo would silently run the defaults).
    __config__=ConfigDict(extra="allow", title="Adaptation settings"),
    __doc__="The settings of one adaptation run (AdaptConfig); unset ones keep their defaults.",
    **_setting_specs(),
)
"""Studio's settings form of the adapter (and the type of `runtime.context`)."""


SERVER_KEYS = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map",
                         "run_id", "assistant_id", "graph_id", "user_id", "cron_id"})
"""Keys a LangGraph server (or its client) puts beside the settings in `configurable`."""


class UnknownSetting(ValueError):
    """A setting the adapter does not have: refused with its name and the closest one."""


def given_settings(context: Any) -> dict[str, Any]:
    """The settings a run was given: the keys set and not None, from `runtime.context`
    (an `AdapterSettings`), a mapping (`configurable`), or nothing. A field's own name is
    taken for its form name (`seed_harness` for `harness`, as in a TOML file); a key that is
    neither raises `UnknownSetting`."""
    if context is None:
        return {}
    if isinstance(context, BaseModel):
        values = {k: getattr(context, k) for k in context.model_fields_set}
        values.update(context.model_extra or {})
    else:
        values = dict(context)
    known = AdapterSettings.model_fields
    aliases = {f.name: f.metadata["flag"] for f in dataclasses.fields(AdaptConfig)
               if f.metadata.get("flag")}
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = aliases.get(key, key)
        if name not in known:
            if key in SERVER_KEYS or key.startswith(("__", "langgraph_", "x-")):
                continue
            raise UnknownSetting(_unknown(key, list(known)))
        if value is not None:
            if name in out and out[name] != value:
                raise UnknownSetting(f"settings {key!r} and {name!r} are one setting, given "
                                     "twice with different values: keep one")
            out[name] = value
    return out


def _unknown(key: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "the settings are the adapter's form"
    return (f"unknown setting {key!r}: {hint} (the fields of Studio's form, as "
            "`harness-learn adapt --help` names its flags)")


def config_values(settings: dict[str, Any]) -> dict[str, Any]:
    """`AdaptConfig(**...)` keyword arguments from settings (parts folded into their field)."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(AdaptConfig):
        name = f.metadata.get("flag") or f.name
        if name in settings:
            values[f.name] = settings[name]
        parts = {p.key: settings[p.option] for p in f.metadata.get("parts") or ()
                 if p.option in settings}
        if parts:
            values[f.name] = {**(values.get(f.name) or {}), **parts}
    if isinstance(values.get("budget"), dict):
        values["budget"] = Budget(**values["budget"])
    if isinstance(values.get("race"), dict):
        values["race"] = RaceRule.from_dict(values["race"])
    return values


def conflicts(settings: dict[str, Any], stored: AdaptConfig) -> list[str]:
    """The given settings a started run's config contradicts, as `name: given != stored`.
    A dict setting conflicts only in the keys it gives (the stored one holds derived keys)."""
    return differences(config_values(settings), stored)


def differences(wanted: dict[str, Any], stored: AdaptConfig) -> list[str]:
    """The fields of `wanted` (field name -> value) that `stored` holds otherwise, as
    `name: wanted != stored`; a dict is compared on the keys `wanted` gives."""
    stored_values = dataclasses.asdict(stored)
    out = []
    for name, value in wanted.items():
        if dataclasses.is_dataclass(value):
            value = dataclasses.asdict(value)
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


def _same(have: Any, value: Any) -> bool:
    if isinstance(have, tuple | list) and isinstance(value, tuple | list):
        return list(have) == list(value)
    return have == value or str(have) == str(value)


__all__ = ["DEFAULT_TASK", "AdapterSettings", "UnknownSetting", "config_values", "conflicts", "differences",
           "given_settings"]
