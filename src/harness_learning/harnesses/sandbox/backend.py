"""Sandbox backends: where a worker process runs (a local subprocess, a Docker container).

A backend is a `SandboxBackend` registered under a name with `@sandbox_backend("name")`, the
way inspect_ai registers its sandbox environments; `get_backend(name)` builds one. The parent
side (`harnesses.sandbox.client.Worker`) talks to the process a backend starts only through
`SandboxProcess`, so a new backend (a VM, a remote runner) is one module and one decorator.
See docs/ARCHITECTURE.md, "Adding a sandbox backend".
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from harness_learning.harnesses.sandbox.limits import Limits

B = TypeVar("B", bound="type[SandboxBackend]")
T = TypeVar("T")
logger = logging.getLogger(__name__)

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


async def in_thread(fn: Callable[..., T], /, *args: Any) -> T:
    """`fn(*args)` (cleanup's file or engine work) in a worker thread, as `asyncio.to_thread`;
    run here instead once the interpreter exits. Python marks every thread pool shut before
    the atexit hooks run, and those hooks are where warm workers are closed: a cleanup that
    needed a thread there stopped before reaping its process, whose transport then raised
    "Event loop is closed" when collected after its loop."""
    loop = asyncio.get_running_loop()
    try:
        done = loop.run_in_executor(None, functools.partial(fn, *args))
    except RuntimeError:  # "cannot schedule new futures after [interpreter] shutdown"
        return fn(*args)
    return await done


def file_work(fn: Callable[[], object]) -> None:
    """Start `fn` (cgroup or engine work nobody awaits): in a worker thread when an event loop
    runs here (as `in_thread`, here at interpreter exit), else now."""
    try:
        loop = asyncio.get_running_loop()
        done = loop.run_in_executor(None, fn)
    except RuntimeError:  # no running loop, or the interpreter exits
        fn()
        return
    # Nobody awaits it: take its outcome here, or a failure prints "Future exception was
    # never retrieved" with a traceback when it is collected.
    done.add_done_callback(_log_file_work_error)


def _log_file_work_error(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is not None:
        logger.debug("cgroup file work failed: %r", done.exception())


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
                    pass_fds: tuple[int, ...] = (), stdin: int = subprocess.DEVNULL,
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
                         "(--sandbox or HARNESS_SANDBOX)")
    return _REGISTRY[name]


SANDBOX_ENV = "HARNESS_SANDBOX"
"""Which backend workers run on: local, docker, a registered name, or auto (the default);
the `--sandbox` flag of `run` and `adapt` sets it."""

MECHANISMS = frozenset({"bwrap", "docker"})
"""Entries of `protections()` that name how a backend works, not what it protects: left out of
the count `auto` ranks by (Docker's container gives what bubblewrap gives the local one)."""


def applied(protections: dict[str, bool]) -> int:
    """How many protections a backend applies: the true entries of its `protections()`."""
    return sum(bool(on) for key, on in protections.items() if key not in MECHANISMS)


@functools.cache
def ranked_backends() -> tuple[tuple[str, int], ...]:
    """The built-in backends that can start a worker here, as (name, protections applied),
    most protections first; at a tie the local backend first (it needs no engine). Probes
    the machine (bubblewrap, cgroups, the engine) once per process: blocking."""
    found = [(name, applied(cls().protections())) for name in BUILTIN
             if (cls := backend_class(name)).available()]
    return tuple(sorted(found, key=lambda entry: (-entry[1], entry[0] != "local")))


def requested_backend() -> str:
    """The backend asked for in `HARNESS_SANDBOX` (auto when unset)."""
    return os.environ.get(SANDBOX_ENV, "").strip() or "auto"


def default_backend() -> SandboxBackend:
    """From `HARNESS_SANDBOX`: local, docker, a registered name, or auto (`ranked_backends`)."""
    return get_backend(requested_backend())


def get_backend(name: str = "auto", **options: Any) -> SandboxBackend:
    """`local`, `docker`, any registered name, or `auto`: the available backend that applies
    the most protections (`ranked_backends`; local at a tie)."""
    if name == "auto":
        name = ranked_backends()[0][0] if ranked_backends() else "local"
    return backend_class(name)(**options)


def choice_line(name: str | None = None) -> str:
    """One line saying which backend workers run on and why: the protections it applies, and
    under `auto` those of the others it was ranked against. Blocking (probes the machine)."""
    requested = name or requested_backend()
    if requested != "auto":
        count = applied(get_backend(requested).protections())
        return f"sandbox: {requested} (as asked; {count} protections applied)"
    ranked = ranked_backends()
    others = "".join(f", {other} {count}" for other, count in ranked[1:])
    return (f"sandbox: {get_backend('auto').name} (auto: the most protections applied; "
            f"{ranked[0][0]} {ranked[0][1]}{others})" if ranked else "sandbox: local")
