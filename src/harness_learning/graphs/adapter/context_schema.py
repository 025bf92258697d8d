"""The adapter's settings as a typed schema: LangGraph's `context_schema`, so Studio shows a
settings form and the SDK takes `context={...}`. It is `AdaptConfig.partial()` (every field
optional, under its setting's name: `harness` for `seed_harness`), shown with the fields'
defaults, and like `harness-learn adapt`'s flags also one setting per `Part` of a structured
field (`dev`, `test`, `data`, `max_solver_calls`, ...; the budget by its parts only). A setting
left unset (None) keeps the field's default, or the track's for the knobs the paper fixes per
track. Given settings are validated by the model like a settings file's
(`config_file.settings_values`), and refused in the same one-line format.

Settings describe a run when it starts; the run directory then holds them (config.json), so a
thread is resumed and read without repeating them (see `graphs.adapter.server_threads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from harness_learning.graphs.adapter.config import AdaptConfig, setting_name
from harness_learning.graphs.adapter.config_file import (
    FORM_HINT,
    SettingError,
    closest_hint,
    differences,
    settings_values,
)
from harness_learning.graphs.adapter.setting_kinds import parts_of

DEFAULT_TASK = "rg:basic_arithmetic"
"""The task of a thread whose settings name none: quick, and needs no data files."""


def _form_fields() -> dict[str, tuple[Any, Any]]:
    """name -> (type, Field) of the form: the partial model's fields, shown with their
    defaults (a nested model as a JSON object), then the parts."""
    partial = AdaptConfig.partial()
    specs: dict[str, tuple[Any, Any]] = {}
    for name, info in AdaptConfig.model_fields.items():
        parts = parts_of(info)
        form = partial.model_fields[setting_name(name)]
        if not (parts and isinstance(info.annotation, type)
                and issubclass(info.annotation, BaseModel)):  # the budget: its parts only
            kind = form.annotation
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
                kind = dict[str, Any] | None
            specs[setting_name(name)] = (kind, Field(_shown_default(name, info),
                                                     description=_help(name, info)))
        for part in parts:
            kind = str if part.type is Path else part.type
            specs[part.option] = (kind | None, Field(None, description=part.help))
    return specs


def _shown_default(name: str, info: FieldInfo) -> object:
    """The default the form shows: the field's own when it is a plain value, else None."""
    if name == "task":
        return DEFAULT_TASK
    value = None if info.is_required() else info.get_default(call_default_factory=True)
    return None if isinstance(value, BaseModel) else value


def _help(name: str, info: FieldInfo) -> str:
    help_text = info.description or ""
    if name == "run_dir":
        help_text += " Default: a directory of its own per thread, outside the source tree."
    return help_text


AdapterSettings: type[BaseModel] = create_model(
    "AdapterSettings",
    # extra="allow": a key the form does not have is kept, so `given_settings` can refuse it
    # by name (ignored, a typo would silently run the defaults).
    __config__=ConfigDict(extra="allow", title="Adaptation settings"),
    __doc__="The settings of one adaptation run (AdaptConfig); unset ones keep their defaults.",
    **_form_fields(),
)
"""Studio's settings form of the adapter (and the type of `runtime.context`)."""


SERVER_KEYS = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map",
                         "run_id", "assistant_id", "graph_id", "user_id", "cron_id"})
"""Keys a LangGraph server (or its client) puts beside the settings in `configurable`."""


class UnknownSetting(SettingError):
    """A setting the adapter does not have (or one given twice), in the one error format of
    every settings surface. Its text ends with the hint: Studio shows only a message."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(f"{message}: {hint}", hint)


def given_settings(context: BaseModel | Mapping[str, object] | None) -> dict[str, Any]:
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
    aliases = {name: setting_name(name) for name in AdaptConfig.model_fields}
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = aliases.get(key, key)
        if name not in known:
            if key in SERVER_KEYS or key.startswith(("__", "langgraph_", "x-")):
                continue
            raise _unknown(key, list(known))
        if value is not None:
            if name in out and out[name] != value:
                raise UnknownSetting(f"settings {key!r} and {name!r} are one setting, given "
                                     "twice with different values", "keep one")
            out[name] = value
    return out


def _unknown(key: str, known: list[str]) -> UnknownSetting:
    """Worded as a settings file's unknown key is (`config_file.setting_error`), with the
    closest of the form's fields (which include the flags' parts, such as `dev`)."""
    return UnknownSetting(f"unknown setting {key!r}", closest_hint(key, known, FORM_HINT))


def config_values(settings: dict[str, Any]) -> dict[str, Any]:
    """`AdaptConfig(**...)` keyword arguments from settings (parts folded into their field),
    validated by the model; a bad one raises `config_file.ConfigFileError`, naming it."""
    values: dict[str, Any] = {}
    for name, info in AdaptConfig.model_fields.items():
        if setting_name(name) in settings:
            values[name] = settings[setting_name(name)]
        parts = {p.key: settings[p.option] for p in parts_of(info) if p.option in settings}
        if parts:
            given = values.get(name) or {}
            values[name] = {**(given.model_dump(exclude_unset=True)
                               if isinstance(given, BaseModel) else given), **parts}
    return settings_values(values, style="setting")


def conflicts(settings: dict[str, Any], stored: AdaptConfig) -> list[str]:
    """The given settings a started run's config contradicts, as `name: given != stored`.
    A dict setting conflicts only in the keys it gives (the stored one holds derived keys)."""
    return differences(config_values(settings), stored)


__all__ = ["DEFAULT_TASK", "AdapterSettings", "UnknownSetting", "config_values", "conflicts", "differences",
           "given_settings"]
