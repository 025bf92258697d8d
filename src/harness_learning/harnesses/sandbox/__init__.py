"""The sandbox: worker processes that run untrusted harness code, and the tool bridge.

Parent side: `Worker` (one candidate's process), `WorkerPool` (pre-started workers),
`run_python` (`tools.python`), `sandbox_info` (which protections are active here), and the
backends a worker runs on (`SandboxBackend`, registered by name: `get_backend("local")`).
The worker side is `harnesses.sandbox.worker` (its `HarnessHost` runs the harness).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_learning.harnesses.sandbox.backend import (
        SandboxBackend,
        SandboxProcess,
        get_backend,
        sandbox_backend,
    )
    from harness_learning.harnesses.sandbox.client import Worker
    from harness_learning.harnesses.sandbox.limits import Limits
    from harness_learning.harnesses.sandbox.pool import WorkerPool
    from harness_learning.harnesses.sandbox.python_exec import run_python
    from harness_learning.harnesses.sandbox.records import ToolHandler, ToolReply

_LAZY = {"ToolHandler": "records", "ToolReply": "records",
         "Worker": "client", "Limits": "limits", "WorkerPool": "pool", "run_python": "python_exec",
         "SandboxBackend": "backend", "SandboxProcess": "backend", "get_backend": "backend",
         "sandbox_backend": "backend"}


def __getattr__(name: str) -> Any:
    """Parent-side names load on first use: the worker process imports this package too and
    should not pay for asyncio and the client at its start."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sandbox_info() -> dict[str, Any]:
    """Which protections a local worker gets on this machine, whether Docker answers, the
    backend `auto` picks and the count of protections each available backend applies."""
    from harness_learning.harnesses.sandbox.backend import ranked_backends
    from harness_learning.harnesses.sandbox.docker_backend import docker_available
    from harness_learning.harnesses.sandbox.local import LocalBackend

    info: dict[str, Any] = LocalBackend().protections()
    info["docker"] = docker_available()
    ranked = ranked_backends()
    info["backend"] = ranked[0][0] if ranked else "local"
    info["applied"] = dict(ranked)
    return info


def sandbox_choice(backend: SandboxBackend | None = None) -> str:
    """The one line saying which backend a run's workers use (`backend`, else the one
    `HARNESS_SANDBOX` names, auto by default) and why; logged at INFO too, so a server's log
    (Studio's) says it. Blocking: it may probe the machine."""
    import logging

    from harness_learning.harnesses.sandbox.backend import choice_line

    line = choice_line(getattr(backend, "name", None) or None)
    logging.getLogger(__name__).info("%s", line)
    return line


FALLBACKS = {
    "bwrap": "no bubblewrap: no namespaces, the host's files and network are visible; rlimits only",
    "import_allowlist": "no filesystem view: the whole virtualenv (dataset generators too) is importable",
    "shm_bounded": "no private /dev/shm: the host's shared memory tmpfs is writable",
    "cgroup_memory": "no memory cgroup: memory is bounded per process (RLIMIT_AS), not per candidate",
    "cgroup_pids": "no pids cgroup: processes are bounded by RLIMIT_NPROC only (which does not bind root)",
    "seccomp": "no seccomp filter: io_uring, perf_event_open, keyctl, bpf... reach the kernel",
    "userns_disabled": "bubblewrap cannot --disable-userns: nested user namespaces can be made",
}


def sandbox_fallbacks(backend: SandboxBackend | None = None) -> dict[str, str]:
    """The protections a local backend lacks here, each with what holds instead (empty for
    Docker, or when everything is in place): a run says so once in its events."""
    from harness_learning.harnesses.sandbox.backend import default_backend

    backend = backend or default_backend()
    if getattr(backend, "name", "") != "local":
        return {}
    have = backend.protections()
    return {key: text for key, text in FALLBACKS.items() if not have.get(key)}


__all__ = ["Limits", "SandboxBackend", "SandboxProcess", "ToolHandler", "ToolReply", "Worker",
           "WorkerPool", "get_backend", "run_python", "sandbox_backend", "sandbox_choice",
           "sandbox_fallbacks", "sandbox_info"]
