"""Sandbox backends: where a worker process runs (a local subprocess, a Docker container).

A backend is a `SandboxBackend` registered under a name with `@sandbox_backend("name")`, the
way inspect_ai registers its sandbox environments; `get_backend(name)` builds one. The parent
side (`harnesses.sandbox.client.Worker`) talks to the process a backend starts only through
`SandboxProcess`, so a new backend (a VM, a remote runner) is one module and one decorator.
See docs/ARCHITECTURE.md, "Adding a sandbox backend".
"""

from __future__ import annotations

import importlib
import os
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from harness_learning.harnesses.sandbox.limits import Limits

B = TypeVar("B", bound="type[SandboxBackend]")

BUILTIN = {"local": "harness_learning.harnesses.sandbox.local",
           "docker": "harness_learning.harnesses.sandbox.docker_backend"}
"""Built-in backends by name -> the module that registers it (imported on first use: Docker's
client library is not loaded for a local run)."""

_REGISTRY: dict[str, type[SandboxBackend]] = {}


class SandboxProcess(ABC):
    """A started worker process. `proc` has asyncio-style `stdin`, `stdout`, `stderr` and
    `wait()`; with a backend's `stdio_bridge` the bridge runs over `stdin`/`stdout`."""

    proc: Any
    limit_hit: str | None = None
    """Why the backend killed the process, when it did (a limit the kernel cannot enforce)."""

    @property
    @abstractmethod
    def pid(self) -> int:
        """The host pid (0 where there is none on this host, as in a container)."""

    @abstractmethod
    def kill(self) -> None:
        """Kill the process and everything it started, now."""

    @abstractmethod
    async def cleanup(self) -> None:
        """Kill, reap and remove what the process left (scratch space, cgroup, container)."""


class SandboxBackend(ABC):
    """Starts worker processes under limits, with no credentials and no network."""

    name: ClassVar[str] = ""
    stdio_bridge: ClassVar[bool] = False
    """True where no file descriptor can be passed in (containers): the tool bridge then runs
    over the process's stdin/stdout instead of a socket pair."""

    @classmethod
    def available(cls) -> bool:
        """Whether this backend can start a worker on this machine now."""
        return True

    @abstractmethod
    def protections(self) -> dict[str, bool]:
        """Which protections a worker gets (rlimits, bwrap, network_isolated, ...)."""

    @abstractmethod
    async def spawn(self, args: list[str], limits: Limits, env: dict[str, str], *,
                    pass_fds: tuple[int, ...] = (), stdin: Any = subprocess.DEVNULL,
                    ) -> SandboxProcess:
        """Start `python <args>` in a fresh sandbox; `env` is added to a scrubbed base."""


def sandbox_backend(name: str) -> Callable[[B], B]:
    """Register a `SandboxBackend` subclass under `name` (a class decorator)."""

    def register(cls: B) -> B:
        if not (isinstance(cls, type) and issubclass(cls, SandboxBackend)):
            raise TypeError(f"@sandbox_backend({name!r}) decorates a SandboxBackend subclass")
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"a sandbox backend named {name!r} is registered already")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return register


def backend_class(name: str) -> type[SandboxBackend]:
    """The backend registered as `name` (built-ins are imported on first use)."""
    if name not in _REGISTRY and name in BUILTIN:
        importlib.import_module(BUILTIN[name])
    if name not in _REGISTRY:
        known = ", ".join(sorted({*BUILTIN, *_REGISTRY}))
        raise ValueError(f"unknown sandbox backend {name!r}; known: {known}, or auto "
                         "(set HARNESS_SANDBOX)")
    return _REGISTRY[name]


def default_backend() -> SandboxBackend:
    """From `HARNESS_SANDBOX`: local, docker, a registered name, or auto (Docker if it answers)."""
    return get_backend(os.environ.get("HARNESS_SANDBOX", "auto"))


def get_backend(name: str = "auto", **options: Any) -> SandboxBackend:
    """`local`, `docker`, any registered name, or `auto` (Docker when an engine answers, else
    local)."""
    if name == "auto":
        name = "docker" if backend_class("docker").available() else "local"
    return backend_class(name)(**options)
