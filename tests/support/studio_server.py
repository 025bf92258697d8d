"""`langgraph dev` as `harness-learn studio` starts it (offline, loopback, a free port, no
browser, no `--allow-blocking`), for tests that drive it through `langgraph_sdk`. Importable as
`studio_server`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from cli_run import free_port

from harness_learning.cli.studio_cmd import dev_command, offline_env, write_config

ALLOW_BLOCKING_WARNING = "You've set --allow-blocking"
"""What the server logs at start when its blocking-call detector is off."""


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/ok", timeout=2) as resp:
            if resp.status == 200:
                return
        time.sleep(0.3)
    raise AssertionError(f"langgraph dev not ready after {timeout} s:\n{log.read_text()[-4000:]}")


@contextlib.contextmanager
def dev_server(log: Path, env: dict[str, str], jobs: int = 3) -> Iterator[str]:
    """The server's base URL while it runs; its output goes to `log`; `env` is added to the
    offline environment. It serves the studio's own langgraph.json from a folder beside `log`,
    where it keeps its state, as `harness-learn studio` does beside its runs. Stopped (its
    whole process group) on the way out."""
    config = write_config(log.parent / f"{log.stem}-server")
    argv = dev_command(free_port(), jobs=jobs, config=config)
    assert "--allow-blocking" not in argv
    full_env = offline_env()
    full_env.pop("LANGSMITH_API_KEY", None)
    full_env.pop("LANGGRAPH_ALLOW_BLOCKING", None)
    full_env.update(env)
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, cwd=config.parent, env=full_env, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{argv[argv.index('--port') + 1]}"
    try:
        wait_ready(url, proc, log)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
