"""Run the installed `harness-learn` as a user would (a subprocess, the real entry point with its
error handling), and a loopback port nobody listens on. Importable as `cli_run`."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

HARNESS_LEARN = str(Path(sys.executable).parent / "harness-learn")


def cli(*args: Any, timeout: float = 600, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([HARNESS_LEARN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def free_port() -> int:
    """A port that was free a moment ago (for a server to start on, or to find nobody on)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The command's last stderr line: where the CLI puts its one-line error."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""
