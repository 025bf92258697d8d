"""Command-line options generated from a pydantic settings model (TRL's `HfArgumentParser`
idea; `AdaptConfig` and the training configs): each field's description is its `--help` text, so a new field becomes a new option and the flags, their defaults and their
docs are written once, on the model.

- a scalar field (`str`, `int`, `float`, `bool`, optional or not) is one option; a `bool` gets
  `--x/--no-x`; a `Literal` is checked against its choices; a `list[str]` is a repeatable
  option; the setting's name is the option's (`--harness` sets `seed_harness`);
- a field with parts (see `graphs.adapter.setting_kinds.Part`) is one option per part, each
  setting one key of the field's dict or model;
- any other field (a dict, a model) is one option taking JSON.

With a settings file (`adapt --config FILE.toml`, read by `graphs.adapter.config_file`) the
file's values sit between the fields' defaults and the flags given on the command line
(`graphs.adapter.config_file.over_file`): only a flag that was typed overrides the file.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import BaseModel, ValidationError

SCALARS = (str, int, float, bool, Path)


@dataclasses.dataclass(frozen=True)
class _Field:
    """One field of a settings model, as the options see it."""

    name: str
    flag: str
    hint: Any
    default: object  # ... when required
    base: Any  # the default, a factory's called
    help: str
    parts: tuple = ()


def _fields(cls: type[BaseModel]) -> list[_Field]:
    from harness_learning.graphs.adapter.setting_kinds import parts_of, setting_name_of

    hints = typing.get_type_hints(cls)
    return [_Field(name, setting_name_of(name, info), hints[name],
                   ... if info.is_required() or info.default_factory else info.default,
                   None if info.is_required() else info.get_default(call_default_factory=True),
                   info.description or "", parts_of(info))
            for name, info in cls.model_fields.items()]


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """(the type inside `X | None`, whether None is allowed)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


def _flag(name: str, is_bool: bool) -> list[str]:
    flag = "--" + name.replace("_", "-")
    return [f"{flag}/--no-{flag[2:]}"] if is_bool else [flag]


def _param(name: str, annotation: Any, default: object, help_text: str, is_bool: bool = False,
           flag: str | None = None) -> inspect.Parameter:
    decls = _flag(flag or name, is_bool)
    option = (typer.Option(..., *decls, help=help_text) if default is ...
              else typer.Option(default, *decls, help=help_text))
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                             default=option)


def _is_str_list(hint: object) -> bool:
    return typing.get_origin(hint) is list and typing.get_args(hint) == (str,)


def field_parameters(cls: type[BaseModel], required: bool = True) -> list[inspect.Parameter]:
    """One keyword parameter per option of `cls`, ready for a typer command's signature.
    `required=False`: a field without a default is an option defaulting to None (a settings
    file may give it; the command checks that one of them did)."""
    params: list[inspect.Parameter] = []
    for f in _fields(cls):
        inner, optional = _unwrap(f.hint)
        if f.parts:
            params += [_param(p.option, p.type | None, None, p.help) for p in f.parts]
        elif typing.get_origin(inner) is Literal:
            choices = ", ".join(map(str, typing.get_args(inner)))
            params.append(_param(f.name, str | None if optional else str, f.default,
                                 f.help or f"One of {choices}.", flag=f.flag))
        elif inner in SCALARS:
            if f.default is ... and not required:
                params.append(_param(f.name, inner | None, None, f.help, flag=f.flag))
                continue
            params.append(_param(f.name, f.hint, f.default, f.help, is_bool=inner is bool,
                                 flag=f.flag))
        elif _is_str_list(inner):
            params.append(_param(f.name, list[str] | None, None, f.help, flag=f.flag))
        else:
            params.append(_param(f.name, str, "", f.help, flag=f.flag))
    return params


def field_values(cls: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `cls(...)` from a command's options (pops them from `given`).
    A part or JSON option left unset keeps the field's default; bad values raise
    `typer.BadParameter` naming the option."""
    values: dict[str, Any] = {}
    for f in _fields(cls):
        inner, _ = _unwrap(f.hint)
        if f.parts:
            set_ = {p.key: _plain(given.pop(p.option)) for p in f.parts}
            set_ = {k: v for k, v in set_.items() if v is not None}
            if set_:
                values[f.name] = _merged(f, inner, set_)
        elif typing.get_origin(inner) is Literal:
            value = given.pop(f.name)
            if value is not None and value not in typing.get_args(inner):
                choices = ", ".join(map(str, typing.get_args(inner)))
                raise typer.BadParameter(f"--{f.flag.replace('_', '-')} {value!r}: choose one "
                                         f"of {choices}")
            values[f.name] = value
        elif inner in SCALARS:
            values[f.name] = _plain(given.pop(f.name))
        elif _is_str_list(inner):
            values[f.name] = list(given.pop(f.name) or [])
        else:
            text = given.pop(f.name)
            if text:
                values[f.name] = _from_json(f, inner, text)
    return values


def _plain(value: object) -> object:
    return str(value) if isinstance(value, Path) else value


def _merged(f: _Field, inner: object, set_: dict[str, Any]) -> object:
    """The field's default with the parts that were given set."""
    if isinstance(f.base, BaseModel):  # a table the model validates (naming the flag)
        return {**f.base.model_dump(), **set_}
    if inner is dict or typing.get_origin(inner) is dict:
        # task_options: only what was given, so each task keeps its own defaults
        return {**f.base, **set_}
    raise TypeError(f"field {f.name}: parts need a dict or model field")


def _from_json(f: _Field, inner: Any, text: str) -> Any:
    flag = "--" + f.flag.replace("_", "-")
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        from_dict = getattr(inner, "from_dict", None)
        if from_dict is not None:
            return from_dict(data)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            return inner.model_validate(data)
        return data
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        said = str(first["msg"]).removeprefix("Value error, ")
        raise typer.BadParameter(f"{flag}: {where + ': ' if where else ''}{said}") from exc
    except (ValueError, TypeError) as exc:
        raise typer.BadParameter(f"{flag}: {exc}") from exc


def given_options(ctx: typer.Context, names: Iterable[str]) -> set[str]:
    """Which of `names` were typed on the command line (or set from the environment), as
    opposed to left at their defaults: only those override a settings file."""
    given = set()
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            given.add(name)
    return given

