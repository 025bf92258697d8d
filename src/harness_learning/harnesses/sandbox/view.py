"""The sandbox's import surface as mounts: which host directories every backend binds for the
interpreter and the project, and at which sandbox paths the curated site-packages view and the
emptied package directories go (`imports` builds the view itself).

A mount over a directory covers one path to it. The same host tree is often bound at two paths
(an environment reached through a symlink is bound at the symlink's path and at its real one;
/lib is /usr/lib on a merged /usr), so each overlay is mounted at every such path (`aliases`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness_learning.harnesses.sandbox import imports

SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")


WORKER_LAYERS = ("harnesses", "retrieval")
"""The package's layers a worker imports: the harness runtime and its tools' retrieval."""


def project_mounts() -> list[tuple[str, str]]:
    """(host, sandbox path) of the package as a worker sees it: a stand-in root holding the
    package's `__init__.py` (`imports.package_root_tree`), then each of `WORKER_LAYERS` at
    its own path inside it."""
    import harness_learning

    root = Path(harness_learning.__file__).resolve().parent
    stand_in = imports.package_root_tree(str(root), WORKER_LAYERS)
    return [(stand_in, str(root)), *((str(root / x), str(root / x)) for x in WORKER_LAYERS)]


def python_dirs() -> list[str]:
    """Every path by which the interpreter and its packages are reached: the base interpreter's
    and the virtualenv's prefixes, each as the interpreter names it and resolved (an
    environment reached through a symlink is bound at both, since code may name either)."""
    dirs = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix,
            sys.base_prefix}
    return sorted(d for d in dirs if os.path.isdir(d))


def system_binds() -> list[tuple[str, str]]:
    """(host directory, sandbox path) of the system directories that exist here. A symlinked
    one is bound by its target (/lib -> usr/lib on a merged /usr), so one host directory can
    be reachable at two sandbox paths."""
    return [(os.path.realpath(d), d) for d in SYSTEM_DIRS if os.path.isdir(d)]


def aliases(path: str, binds: list[tuple[str, str]]) -> list[str]:
    """Every sandbox path at which host directory `path` appears through `binds` (host,
    sandbox), `path` itself first. A mount over a directory covers one path to it only: the
    allowlisted view and the emptied package directories must be mounted at each of these,
    or a second bind of the same host tree shows what the first one hides."""
    real = os.path.realpath(path)
    found = [path]
    for source, target in binds:
        root = os.path.realpath(source).rstrip("/")
        if real == root or real.startswith(root + "/"):
            found.append(target.rstrip("/") + real[len(root):])
    return list(dict.fromkeys(found))


def view_mounts() -> list[tuple[str | None, str]]:
    """The sandbox's import surface as (host path, or None for an empty tmpfs; sandbox path),
    in mount order: the interpreter read-only, other package directories emptied, the curated
    site-packages over the virtualenv's (see `imports`), then the project's layers; the last
    three at every path the binds make them reachable by (`aliases`). The layers come last:
    a package installed from a wheel lies inside site-packages, and a view mounted after them
    would hide it (`imports.installed_package_dirs` keeps its mount point in the view). Every backend mounts exactly
    this after the system directories (bubblewrap: `view_argv`; Docker: `docker_backend`)."""
    mounts: list[tuple[str | None, str]] = [(d, d) for d in python_dirs()]
    project = project_mounts()
    binds = system_binds() + [(s, t) for s, t in [*mounts, *project] if s is not None]
    mounts += [(None, t) for d in imports.hidden_site_dirs() for t in aliases(d, binds)]
    site, view = imports.site_tree()
    mounts += [(view, t) for t in aliases(site, binds)]
    return [*mounts, *((s, t) for s, target in project for t in aliases(target, binds))]
