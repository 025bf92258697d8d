"""The worker's import surface: an allowlist of distributions, shown as a filesystem view.

Harness code must not reach gold answers. Everything bound into the sandbox is importable,
and the whole virtualenv holds the dataset generators (`reasoning_gym` regenerates any
problem from its seed), numpy, the model clients and the project's `evals`. An import hook in
the worker would not hold: harness code runs in the same interpreter and can remove it. So the
sandbox binds only what the allowlist names: the standard library, the distributions below and
what they require (transitively, extras excluded), and the project's editable-install path
file. The package itself is shown as its root `__init__.py` and the two layers a worker runs
(`package_root_tree`, `view.project_mounts`): `evals`, `graphs` and `training` beside them
are absent. Everything else in site-packages (the base interpreter's too) is simply absent
from the worker's filesystem.

The view is one directory, built once per set of entries (hard links where the filesystem
allows, else copies) and bound over site-packages in a single mount: binding ~80 entries one
by one made every sandbox start ~170 ms slower (bubblewrap rescans the mount table per bind).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import sys
import threading
from pathlib import Path

ALLOWED = ("langgraph", "langchain-core", "typing-extensions")
"""What harness code may import besides the standard library and the harness runtime (the
tools contract needs nothing more: its types are the runtime's own)."""
DENIED = ("reasoning-gym", "harness-learning-evals")
"""Never bound, even if a requirement pulled it in: dataset generators know the gold."""
PROJECT = "harness-learning"


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requires(dist: md.Distribution) -> list[str]:
    """Names of what `dist` needs in this environment, without optional extras."""
    from packaging.requirements import Requirement

    names = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(_canon(req.name))
    return names


@functools.cache
def allowed_distributions() -> tuple[str, ...]:
    """The allowlist's transitive closure over the installed distributions."""
    seen: set[str] = set()
    todo = [_canon(n) for n in ALLOWED]
    while todo:
        name = todo.pop()
        if name in seen or name in DENIED:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        todo.extend(_requires(dist))
    return tuple(sorted(seen))


def _top_entries(dist: md.Distribution, site: Path) -> set[str]:
    """The top-level names `dist` installed directly in `site` (packages, modules, its
    metadata directory, .pth files)."""
    entries = set()
    for file in dist.files or []:
        parts = Path(file).parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith(".pyc"):
            continue
        entries.add(parts[0])
    return {e for e in entries if (site / e).exists()}


@functools.cache
def site_view() -> tuple[str, tuple[str, ...]]:
    """(the virtualenv's site-packages, the entries of it the sandbox binds)."""
    site = Path(next(p for p in sys.path if p.endswith("site-packages") and
                     p.startswith(sys.prefix)))
    entries: set[str] = set()
    for name in allowed_distributions():
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        if Path(str(dist.locate_file(""))).resolve() == site.resolve():
            entries |= _top_entries(dist, site)
    # The project's own editable path file or finder, by its exact name (a distribution whose
    # name starts like the project's is not its): the code is bound layer by layer
    # (`view.project_mounts`).
    try:
        project, version = PROJECT.replace("-", "_"), md.version(PROJECT)
    except md.PackageNotFoundError:  # run from a source tree put on the path by hand
        return str(site), tuple(sorted(entries))
    own = (f"__editable__.{project}-{version}.pth",
           f"__editable___{project}_{version.replace('.', '_')}_finder.py")
    entries |= {name for name in own if (site / name).exists()}
    return str(site), tuple(sorted(entries))


def hidden_site_dirs() -> list[str]:
    """Package directories outside the virtualenv that must look empty in the sandbox: the
    base interpreter's site-packages and the system's dist-packages."""
    base = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    dirs = [base / "site-packages", Path("/usr/lib/python3/dist-packages"),
            Path(f"/usr/local/lib/python{sys.version_info[0]}.{sys.version_info[1]}/dist-packages"),
            Path(f"/usr/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages")]
    return [str(d) for d in dirs if d.is_dir()]


VIEW_PREFIX = ".hl-sandbox-site-"
VIEW_FORMAT = "3"  # bump when the way a view is built changes
VIEW_COMPLETE = ".complete"
"""Written last into a view: a directory without it is a build that did not finish."""
_VIEW_LOCK = threading.Lock()


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _build_view(site: str, entries: tuple[str, ...], view: Path,
                empty_dirs: tuple[str, ...] = ()) -> bool:
    """Build `view` from a staging directory of this thread's own and rename it into place;
    False when this location cannot hold it. Concurrent builders (processes, threads) each
    stage apart, and the loser of the rename uses the winner's view. `empty_dirs` are made
    in it as mount points for what is bound inside the view."""
    staging = view.with_name(f"{view.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        staging.mkdir()
    except OSError:
        return False
    try:
        for name in empty_dirs:
            (staging / name).mkdir()
        for entry in entries:
            src = Path(site) / entry
            if src.is_dir():
                # with __pycache__: workers never write bytecode, and compiling
                # langgraph and pydantic from source costs seconds a start
                shutil.copytree(src, staging / entry, copy_function=_link_or_copy)
            else:
                _link_or_copy(str(src), str(staging / entry))
        (staging / VIEW_COMPLETE).touch()
        staging.rename(view)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return (view / VIEW_COMPLETE).is_file()  # another builder renamed first
    return True


@functools.cache
def site_tree() -> tuple[str, str]:
    """(site-packages, a directory holding only its allowed entries), built on first use
    next to the virtualenv (or in the temp directory when the virtualenv is read-only).
    Thread-safe: sandboxes are started from worker threads, and two threads building one
    view at once must not see each other's half-copied directory."""
    with _VIEW_LOCK:
        return _site_tree()


def _site_tree() -> tuple[str, str]:
    site, entries = site_view()
    return site, _cached_view(site, entries, installed_package_dirs(site))


def installed_package_dirs(site: str) -> tuple[str, ...]:
    """The package's own folder name when it is installed in `site` (from a wheel), as an
    empty mount point of the view: the view is bound over site-packages and the package's
    layers over that folder (`view.project_mounts`); without it the view hid the package
    and a worker could not import harness_learning. An editable install lies elsewhere."""
    root = Path(__file__).resolve().parents[2]
    return (root.name,) if root.parent == Path(site).resolve() else ()


def _cached_view(source: str, entries: tuple[str, ...], empty_dirs: tuple[str, ...] = ()) -> str:
    """The view of `entries` of `source` (plus `empty_dirs`), built once next to the
    virtualenv, or in the temp directory when the virtualenv is read-only."""
    # Names, inodes and mtimes: a reinstall (same version) makes new files, so a new view.
    stamps = [f"{e}:{st.st_ino}:{st.st_mtime_ns}" for e in entries
              for st in [os.stat(Path(source) / e)]]
    key = hashlib.sha256("\n".join([VIEW_FORMAT, source, *stamps, *empty_dirs]).encode())
    for parent in (Path(sys.prefix), Path(os.environ.get("TMPDIR", "/tmp"))):
        view = parent / f"{VIEW_PREFIX}{key.hexdigest()[:16]}"
        if (view / VIEW_COMPLETE).is_file() or _build_view(source, entries, view, empty_dirs):
            return str(view)
    raise OSError(f"could not build the sandbox's view of {source}")


@functools.cache
def package_root_tree(root: str, layers: tuple[str, ...]) -> str:
    """A directory standing for the package root `root` in the sandbox: its `__init__.py`
    and an empty folder per layer in `layers`, over which each layer is bound. Binding the
    root itself would show every layer (in a src layout they are its subfolders)."""
    with _VIEW_LOCK:
        return _cached_view(root, ("__init__.py",), layers)
