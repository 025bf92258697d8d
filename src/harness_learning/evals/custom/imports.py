"""`module:attr` and `path/to/file.py:attr` references to a user's own code (a metric, a task
class, a tool). The user's code is trusted and runs in the parent; a reference that cannot be
imported is one clear error naming it."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any


class UserCodeError(ImportError):
    """A `module:attr` reference that cannot be resolved (the message says why and what to do)."""


def is_reference(text: str) -> bool:
    """`module:attr` or `file.py:attr` (not a Windows drive, not a URL)."""
    if ":" not in text or "://" in text:
        return False
    module, _, attr = text.rpartition(":")
    return bool(module) and attr.isidentifier() and len(module) > 1


def resolve(ref: str, what: str, base: Path | None = None) -> Any:
    """The object `ref` names. A `.py` path is loaded from the file (relative to `base` first,
    then to the working directory); anything else is imported as a module."""
    module_name, _, attr = ref.rpartition(":")
    if not module_name or not attr:
        raise UserCodeError(f"{what} {ref!r}: expected module:attr or path/to/file.py:attr")
    try:
        if module_name.endswith(".py"):
            module = _load_file(_find_file(module_name, base), what, ref)
        else:
            module = importlib.import_module(module_name)
    except UserCodeError:
        raise
    except Exception as exc:
        raise UserCodeError(
            f"{what} {ref!r}: importing {module_name!r} failed ({type(exc).__name__}: {exc}); "
            "is the module on PYTHONPATH (or pass path/to/file.py:attr)?") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UserCodeError(f"{what} {ref!r}: module {module_name!r} has no attribute "
                              f"{attr!r}") from None


def _find_file(name: str, base: Path | None) -> Path:
    for candidate in ([base / Path(name).name] if base is not None else []) + [Path(name)]:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no file {name}")


def _load_file(path: Path, what: str, ref: str) -> ModuleType:
    """Import a file once per (place, content): a stable module name, so reloads agree, and
    one whose `__file__` is this very file (a reference to it must name where it is)."""
    digest = hashlib.sha256(str(path.resolve()).encode() + b"\0" + path.read_bytes()).hexdigest()[:12]
    name = f"_user_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserCodeError(f"{what} {ref!r}: {path} is not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _by_file(module: str, mod: ModuleType | None) -> bool:
    """A loose script-side module (one file next to a script, not an installed package) is
    referred to by its file, so a run can keep a copy and reopen it from anywhere."""
    if module.startswith("_user_"):
        return True
    path = str(getattr(mod, "__file__", "") or "")
    installed = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return ("." not in module and path.endswith(".py") and not path.endswith("__init__.py")
            and not any(path.startswith(p) for p in installed if p))


def file_of(ref: str) -> str | None:
    """The `.py` file a reference loads from, if it names one."""
    module_name = ref.rpartition(":")[0]
    return module_name if module_name.endswith(".py") else None


def reference_of(obj: object) -> str | None:
    """`module:attr` (or `file.py:attr` for a loose script-side module) for an importable,
    module-level object, so a run can re-import it by name; None for lambdas, closures and
    objects defined in `__main__`. A LangChain tool made by `@tool` is found in the module of
    the function it wraps."""
    names = [getattr(obj, "__module__", None)]
    names += [getattr(getattr(obj, a, None), "__module__", None) for a in ("func", "coroutine")]
    for module in dict.fromkeys(n for n in names if n and n != "__main__"):
        mod = sys.modules.get(module)
        prefix = getattr(mod, "__file__", None) if _by_file(module, mod) else module
        if mod is None or prefix is None:
            continue
        for name, value in vars(mod).items():
            if value is obj and name.isidentifier():
                return f"{prefix}:{name}"
    return None
