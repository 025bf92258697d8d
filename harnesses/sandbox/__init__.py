"""The sandbox: worker processes that run untrusted harness code, and the tool bridge.

Parent side: `Worker` (one candidate's process), `WorkerPool` (pre-started workers),
`run_python` (`tools.python`), `sandbox_info` (which protections are active here).
The worker side is `harnesses.sandbox.worker`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_learning.harnesses.sandbox.client import Worker
    from harness_learning.harnesses.sandbox.limits import Limits
    from harness_learning.harnesses.sandbox.pool import WorkerPool
    from harness_learning.harnesses.sandbox.python_exec import run_python
    from harness_learning.harnesses.sandbox.records import ToolHandler, ToolReply

_LAZY = {"ToolHandler": "records", "ToolReply": "records",
         "Worker": "client", "Limits": "limits", "WorkerPool": "pool", "run_python": "python_exec"}


def __getattr__(name: str) -> Any:
    """Parent-side names load on first use: the worker process imports this package too and
    should not pay for asyncio and the client at its start."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def choose_backend(kind: str = "auto") -> Any:
    """`local`, `docker`, or `auto` (Docker when an engine answers, else local)."""
    from harness_learning.harnesses.sandbox.docker_backend import DockerBackend, docker_available
    from harness_learning.harnesses.sandbox.local import LocalBackend

    if kind == "docker" or (kind == "auto" and docker_available()):
        return DockerBackend()
    if kind in ("local", "auto"):
        return LocalBackend()
    raise ValueError(f"unknown sandbox backend {kind!r}; expected local, docker or auto")


def sandbox_info() -> dict[str, Any]:
    """Which protections a local worker gets on this machine, and whether Docker answers."""
    from harness_learning.harnesses.sandbox.docker_backend import docker_available
    from harness_learning.harnesses.sandbox.local import LocalBackend

    info: dict[str, Any] = LocalBackend().protections()
    info["docker"] = docker_available()
    info["backend"] = "docker" if info["docker"] else "local"
    return info


FALLBACKS = {
    "bwrap": "no bubblewrap: no namespaces, the host's files and network are visible; rlimits only",
    "import_allowlist": "no filesystem view: the whole virtualenv (dataset generators too) is importable",
    "shm_bounded": "no private /dev/shm: the host's shared memory tmpfs is writable",
    "cgroup_memory": "no memory cgroup: memory is bounded per process (RLIMIT_AS), not per candidate",
    "cgroup_pids": "no pids cgroup: processes are bounded by RLIMIT_NPROC only (which does not bind root)",
    "seccomp": "no seccomp filter: io_uring, perf_event_open, keyctl, bpf... reach the kernel",
    "userns_disabled": "bubblewrap cannot --disable-userns: nested user namespaces can be made",
}


def sandbox_fallbacks(backend: Any = None) -> dict[str, str]:
    """The protections a local backend lacks here, each with what holds instead (empty for
    Docker, or when everything is in place): a run says so once in its events."""
    from harness_learning.harnesses.sandbox.client import default_backend

    backend = backend or default_backend()
    if getattr(backend, "name", "") != "local":
        return {}
    have = backend.protections()
    return {key: text for key, text in FALLBACKS.items() if not have.get(key)}


__all__ = ["Limits", "ToolHandler", "ToolReply", "Worker", "WorkerPool",
           "choose_backend", "run_python", "sandbox_fallbacks", "sandbox_info"]
