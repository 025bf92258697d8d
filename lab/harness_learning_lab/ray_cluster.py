"""A Ray cluster for the lab's grids (`bench peers --ray`, `experiment --ray`): attaching to
one in a bounded time, and the job's `runtime_env` that carries the lab to its workers.

Ray is an optional extra, imported only here and only when `--ray` is given. The lab is not
assumed installed on the workers (harness-learning's wheel holds none of it): the job's
`runtime_env` carries it as a py_module, and the repository root (without the virtualenv,
runs, git objects or data) as `working_dir` for the experiment configs it reads.
"""

from __future__ import annotations

import shlex
import socket
import sys
from pathlib import Path
from typing import Any

from harness_learning_lab import checkout


class RayProblem(Exception):
    """Ray missing, or a cluster address that is malformed or does not answer: the command
    line (`errors.classify`, which reads `hint` and `unreachable`) turns it into one line,
    exit 4 when the cluster did not answer, else 2; the lab does not reach into the CLI."""

    def __init__(self, message: str, hint: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.hint, self.unreachable = hint, unreachable


LAB = Path(__file__).resolve().parent
"""The lab package the workers import (lab/harness_learning_lab/)."""
EXCLUDES = [".venv", ".git", "runs", "**/__pycache__", "*.gguf", "*.sqlite", "*.egg-info",
            "/src", "**/data/*.tar*", "docs", "tests", ".ruff_cache", ".hypothesis",
            ".pytest_cache"]
"""What the runtime_env leaves out: it is uploaded per job and Ray caps it at 500 MiB. The
product (`src/`) stays out: the workers import the installed package, whose directories the
sandbox binds."""
INSTALL = "pip install 'harness-learning[ray]'"
PROBE_S = 5.0


def runtime_env() -> dict[str, Any]:
    """The job's runtime_env: the lab as a py_module, the repository root as working_dir,
    both kept small. Where this Python's path needs shell quoting (a clone under a folder with
    spaces), it is given as `py_executable`, quoted: Ray starts a runtime_env's workers
    through `bash -c "exec PYTHON ..."` with that path unquoted, and such a worker never
    starts."""
    env: dict[str, Any] = {"working_dir": str(checkout()), "py_modules": [str(LAB)],
                           "excludes": list(EXCLUDES)}
    if shlex.quote(sys.executable) != sys.executable:
        env["py_executable"] = shlex.quote(sys.executable)
    return env


def _host_port(address: str) -> tuple[str, int] | None:
    """`HOST:PORT` of an address (`ray://HOST:PORT` too), or None for `auto`."""
    if address == "auto":
        return None
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise RayProblem(f"--ray {address!r}: want auto, HOST:PORT or ray://HOST:PORT",
                         "e.g. --ray auto (the cluster `ray start` made here) or --ray "
                         "10.0.0.5:6379")
    return host, int(port)


def connect(address: str) -> Any:
    """The `ray` module, attached to the cluster at `address` (kept if this process already
    is, as under a test's local cluster). An address that does not answer fails in one line
    within `PROBE_S` rather than in Ray's minute of retries."""
    try:
        import ray
    except ImportError:
        raise RayProblem("--ray needs Ray, which is not installed", INSTALL) from None
    if ray.is_initialized():
        return ray
    target = _host_port(address)
    if target is not None:
        try:
            socket.create_connection(target, timeout=PROBE_S).close()
        except OSError as e:
            raise unreachable(address, str(e)) from None
    try:
        ray.init(address=address, runtime_env=runtime_env(), include_dashboard=False,
                 log_to_driver=True)
    except (ConnectionError, RuntimeError, TimeoutError) as e:
        raise unreachable(address, str(e).splitlines()[0] if str(e) else type(e).__name__) \
            from None
    return ray


def unreachable(address: str, detail: str) -> RayProblem:
    return RayProblem(f"the Ray cluster at {address} did not answer: {detail}",
                      "start one (`ray start --head`) or give its address as --ray HOST:PORT; "
                      "without --ray the grid runs here", unreachable=True)


def remote_task(ray: Any, fn: Any) -> Any:
    """`fn` as a Ray task of one CPU, never retried (a grid's runs resume from their logs
    instead)."""
    return ray.remote(num_cpus=1, max_retries=0)(fn)
