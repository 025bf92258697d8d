"""What the Docker backend does around its containers so that none outlives its parent or its
limits: labels naming the parent, a sweep of the containers of parents that no longer run, and
one cgroup per candidate that the engine nests every container of that candidate under.

Labels: each container carries `harness-learning.parent=<pid>` and the host's name. The engine
removes a container when it exits (`auto_remove`), but a parent killed outright leaves ones that
never started or still run (a harness ignoring its closed stdin); `sweep_orphans` removes, once
per process, every labelled container of this host whose parent pid is not alive.

Candidate cgroups: with the engine's `cgroupfs` driver on a cgroup v1 host (the engine then
names cgroups by path in the hierarchies this process sees), a container is created with
`cgroup_parent` set to a group the parent made with `cgroups.Cgroups`, holding the candidate's
memory, pids and CPU limits; a `tools.python` container goes into a child group of its
candidate's, as on the local backend. The kernel then counts the worker and its calls together,
and the counters stay readable after the container is gone (the group is ours). The engine also
makes that path in the hierarchies we do not limit (cpuset, blkio, ...): `remove_group` removes
those directories as well.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.sandbox.cgroups import ROOT, Cgroups, Group
from harness_learning.harnesses.sandbox.local import _dead

if TYPE_CHECKING:
    from docker import DockerClient

logger = logging.getLogger(__name__)

PARENT_LABEL = "harness-learning.parent"
HOST_LABEL = "harness-learning.host"


def labels(pid: int) -> dict[str, str]:
    """The labels of a container started by process `pid` of this host."""
    return {PARENT_LABEL: str(pid), HOST_LABEL: socket.gethostname()}


def orphaned(container_labels: dict[str, str]) -> bool:
    """Whether a labelled container's parent was of this host and no longer runs (a label
    that names no pid, or another host, is left alone)."""
    pid = container_labels.get(PARENT_LABEL, "")
    return (container_labels.get(HOST_LABEL) == socket.gethostname() and pid.isascii()
            and pid.isdigit() and _dead(int(pid)))


def sweep_orphans(client: DockerClient) -> list[str]:
    """Remove (forcibly: a running one is killed) every labelled container whose parent no
    longer runs; the ids removed. Blocking: call it in a thread."""
    removed = []
    with contextlib.suppress(Exception):
        for container in client.containers.list(all=True, filters={"label": PARENT_LABEL}):
            if orphaned(container.labels or {}):
                with contextlib.suppress(Exception):
                    container.remove(force=True)
                    removed.append(container.id)
    if removed:
        logger.info("removed %d sandbox container(s) of parents that no longer run",
                    len(removed))
    return removed


_SWEPT: set[str] = set()
"""The engines (by address) this process has swept already: once each is enough."""


def sweep_once(client: DockerClient) -> None:
    """`sweep_orphans` at a process's first container on an engine. Blocking."""
    where = str(getattr(getattr(client, "api", None), "base_url", id(client)))
    if where not in _SWEPT:
        _SWEPT.add(where)
        sweep_orphans(client)


def engine_cgroups(client: DockerClient) -> Cgroups | None:
    """The hierarchy candidate groups are made in, where the engine nests containers under a
    `cgroup_parent` path of it (cgroupfs driver, cgroup v1 on both sides); else None.
    Blocking (asks the engine once per address)."""
    cgroups = Cgroups.probe()
    if cgroups is None or cgroups.version != 1:
        return None
    where = getattr(getattr(client, "api", None), "base_url", None)
    if where is None:
        info = _ask_info(client)
    else:
        info = _INFO[where] = _INFO.get(where) or _ask_info(client)
    if info.get("CgroupDriver") != "cgroupfs" or str(info.get("CgroupVersion", "1")) != "1":
        return None
    return cgroups


_INFO: dict[str, dict[str, Any]] = {}
"""The engines' answers to `info`, by address (asked again only where one did not answer)."""


def _ask_info(client: DockerClient) -> dict[str, Any]:
    try:
        return dict(client.info())
    except Exception:
        return {}


def parent_path(group: Group) -> str:
    """The `cgroup_parent` naming `group` (its path inside each v1 hierarchy)."""
    return "/" + "/".join(group.dirs[0].relative_to(ROOT).parts[1:])


def nested(group: Group, container_id: str) -> bool:
    """Whether the engine put the container in `group` (its cgroup directory is in it)."""
    return (group.dirs[0] / container_id).is_dir()


def remove_group(group: Group) -> bool:
    """Remove `group` and the directories the engine made at its path in the other
    hierarchies; False while members are still exiting."""
    done = group.remove()
    relative = Path(parent_path(group).lstrip("/"))
    with contextlib.suppress(OSError):
        for hierarchy in ROOT.iterdir():
            path = hierarchy / relative
            if path in group.dirs or hierarchy.is_symlink() or not path.is_dir():
                continue
            for sub in sorted((p for p in path.rglob("*") if p.is_dir()),
                              key=lambda p: len(p.parts), reverse=True) + [path]:
                with contextlib.suppress(OSError):
                    sub.rmdir()
    return done
