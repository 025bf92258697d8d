"""What a settings field of `AdaptConfig` carries beside its type: its help (the field's
description), its command-line parts, and how a path it holds is read.

Paths: a settings file's relative paths name files beside the file, not in the working
directory (`studio` serves from elsewhere, and a file's meaning must not depend on where a
command was started). The field says which of its values are paths (`RelativePath`,
`HarnessRef`, `FileRef`, `FileRefs`, `AtFile`, `OptionPaths`); validating with
`context={"folder": FOLDER}` makes them absolute against FOLDER, and without it they are kept
as written. A `Path` object given from Python is taken as its text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from pydantic import AliasChoices, BeforeValidator, Field, ValidationInfo
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class Part:
    """A command-line option (and Studio setting) that sets one key of a structured field
    (`task_options`, `proposer_params`, `budget`): `adapt --dev 40` sets
    `task_options["n_dev"] = 40`."""

    option: str
    key: str
    type: type
    help: str


@dataclass(frozen=True)
class Parts:
    """`Annotated` metadata of a structured field: its parts (see `Part`)."""

    parts: tuple[Part, ...]


def parts_of(info: FieldInfo) -> tuple[Part, ...]:
    """The parts a field's `FieldInfo` declares (none for most fields)."""
    for item in getattr(info, "metadata", ()):
        if isinstance(item, Parts):
            return item.parts
    return ()


def setting(default: object = PydanticUndefined, *, help: str,
            factory: Callable[[], object] | None = None,
            **constraints: Any) -> Any:
    """A field with its help text (TRL style): the one source of `adapt`'s options, the
    settings file's keys, Studio's form and their docs. `constraints`: pydantic's (ge=...)."""
    if factory is not None:
        return Field(default_factory=factory, description=help, **constraints)
    return Field(default, description=help, **constraints)


def _folder(info: ValidationInfo) -> Path | None:
    folder = (info.context or {}).get("folder")
    return Path(folder) if folder else None


def _at(text: str, folder: Path) -> str:
    path = Path(text).expanduser()
    return text if path.is_absolute() else str(folder / path)


def _ref(text: str, folder: Path) -> str:
    """A `file.py:attr` reference's file, or a data file or folder, against `folder`; a
    registered name, `module:attr`, `mcp:` or `rg:` reference as written."""
    from harness_learning.evals.custom.datafile import is_data_path

    module, colon, attr = text.rpartition(":")
    if colon and module.endswith(".py"):
        return f"{_at(module, folder)}:{attr}"
    return _at(text, folder) if is_data_path(str(folder / text)) else text


def _text(value: object) -> object:
    return str(value) if isinstance(value, PurePath) else value


def _path(value: object, info: ValidationInfo) -> object:
    value, folder = _text(value), _folder(info)
    return _at(value, folder) if folder and isinstance(value, str) else value


def _harness(value: object, info: ValidationInfo) -> object:
    """A harness file; a seed name or source text as written."""
    from harness_learning.harnesses.seeds import SEEDS

    value, folder = _text(value), _folder(info)
    if folder and isinstance(value, str) and value not in SEEDS and "\n" not in value:
        return _at(value, folder)
    return value


def _file_ref(value: object, info: ValidationInfo) -> object:
    value, folder = _text(value), _folder(info)
    return _ref(value, folder) if folder and isinstance(value, str) else value


def _file_refs(value: object, info: ValidationInfo) -> object:
    folder = _folder(info)
    if not isinstance(value, list | tuple):
        return value
    value = [_text(v) for v in value]
    return [_ref(v, folder) if folder and isinstance(v, str) else v for v in value]


def _at_file(value: object, info: ValidationInfo) -> object:
    folder = _folder(info)
    if folder and isinstance(value, str) and value.startswith("@"):
        return "@" + _at(value[1:], folder)
    return value


PATH_OPTIONS = ("path", "index_dir")
"""`task_options` keys whose value is a path."""


def _option_paths(value: object, info: ValidationInfo) -> object:
    folder = _folder(info)
    if not isinstance(value, dict):
        return value
    return {k: _at(v, folder) if folder and k in PATH_OPTIONS and isinstance(v, str)
            else _text(v) for k, v in value.items()}


RelativePath = BeforeValidator(_path)
"""A path (`run_dir`, `aliases`)."""
HarnessRef = BeforeValidator(_harness)
"""A seed name, a harness file or its source text."""
FileRef = BeforeValidator(_file_ref)
"""A data file, `file.py:attr`, or a name (`task`, `metric`)."""
FileRefs = BeforeValidator(_file_refs)
"""A list of `FileRef`s (`tools`)."""
AtFile = BeforeValidator(_at_file)
"""Text, or `@file` (`describe`)."""
OptionPaths = BeforeValidator(_option_paths)
"""A task's options, whose `path` and `index_dir` are paths."""


def setting_name_of(name: str, info: FieldInfo) -> str:
    """A field's setting name: its flag, settings-file key and Studio field; the first of its
    validation aliases where it has some (`harness` for `seed_harness`)."""
    alias = getattr(info, "validation_alias", None)
    return alias.choices[0] if isinstance(alias, AliasChoices) else name  # type: ignore[return-value]
