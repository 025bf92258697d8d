"""The parent's handle on one sandbox worker: start, load a source, run problems, close.

The parent owns the tools: each `call` message from the worker is served by the bound
toolbox as its own asyncio task (calls are never serialised) and recorded with its latency;
the records of one problem are its trace. Messages from the worker are untrusted input:
any line (too long, too deep, not UTF-8, not JSON) kills the worker as a protocol violation,
and only the parent's own record decides that a problem failed for infrastructure reasons
(a worker that reports "infra" or "budget" without a failed call of that kind in the
parent's trace is making a claim, and the problem is the harness's fault).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import subprocess
import time
from collections.abc import Coroutine
from contextvars import Context, copy_context
from typing import Any

from harness_learning.harnesses.compiler import HarnessInvalid, check_source
from harness_learning.harnesses.contract import LINE_LIMIT
from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.sandbox.backend import SandboxBackend, SandboxProcess
from harness_learning.harnesses.sandbox.cgroups import Usage
from harness_learning.harnesses.sandbox.kills import death_verdict, named_limit
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.problem_run import ProblemRun, RunObserver
from harness_learning.harnesses.sandbox.protocol import (
    BRIDGE_FD_ENV,
    LIMITS_ENV,
    decode,
    encode,
)
from harness_learning.harnesses.sandbox.records import (
    CappedOutput,
    ToolHandler,
    Verdict,
    judged_outcome,
)
from harness_learning.harnesses.sandbox.served_calls import ServedCalls
from harness_learning.harnesses.sandbox.trace import TraceBounds

START_TIMEOUT_S = 60.0
LOAD_TIMEOUT_S = 60.0
GRACE_S = 5.0
DRAIN_ABOVE_BYTES = 256 * 1024
"""Replies are written at once; the writer waits for the worker to read only past this."""


class Worker(ServedCalls):
    """An async handle on one sandbox worker process. Use as `async with Worker(...) as w`."""

    def __init__(self, toolbox: ToolHandler | None = None, limits: Limits | None = None,
                 backend: SandboxBackend | None = None) -> None:
        self.toolbox = toolbox
        self.limits = limits or Limits()
        self.backend: SandboxBackend | None = backend  # None: the default, chosen by `start`
        self.process: SandboxProcess | None = None
        self.stdout = CappedOutput(self.limits.output_bytes)
        self.stderr = CappedOutput(self.limits.output_bytes)
        self.info: dict[str, Any] = {}
        self.shape: object = None
        """The loaded graph's shape as the worker described it (check it: `check_shape`)."""
        self.start_s = 0.0
        self._runs: dict[str, ProblemRun] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task] = set()
        self._ready: asyncio.Future | None = None
        self._loaded: asyncio.Future | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._write_lock = asyncio.Lock()
        self._death: tuple[str, str] | None = None
        self._closing = False
        self._timer: asyncio.TimerHandle | None = None
        self._python_gate = asyncio.Semaphore(self.limits.python_concurrency)
        self._trace = TraceBounds(self.limits)

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def bind(self, toolbox: ToolHandler | None) -> None:
        self.toolbox = toolbox

    def restart_clock(self) -> None:
        """Count the candidate's wall-clock limit from now (a pooled worker waited idle)."""
        if self._timer is not None and self._death is None:
            self._timer.cancel()
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.limits.candidate_timeout_s, self._expire)

    @property
    def alive(self) -> bool:
        return self._death is None and self.process is not None

    async def start(self) -> None:
        """Spawn the worker; returns once its imports are done and it waits for `load`.
        A no-op for a worker already started (one from a pool)."""
        if self.process is not None:
            return
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        if self.backend is None:  # in a thread: the first choice probes the machine
            from harness_learning.harnesses.sandbox.backend import default_backend
            self.backend = await asyncio.to_thread(default_backend)
        env = {LIMITS_ENV: json.dumps(self.limits.to_dict())}
        args = ["-m", "harness_learning.harnesses.sandbox.worker"]
        if self.backend.stdio_bridge:  # containers: bridge over stdin/stdout
            env[BRIDGE_FD_ENV] = "stdio"
            self.process = await self.backend.spawn(args, self.limits, env, stdin=subprocess.PIPE)
            reader, self._writer = self.process.proc.stdout, self.process.proc.stdin
            stdout = None
        else:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            env[BRIDGE_FD_ENV] = str(theirs.fileno())
            try:
                self.process = await self.backend.spawn(args, self.limits, env,
                                                        pass_fds=(theirs.fileno(),))
            finally:
                theirs.close()
            reader, self._writer = await asyncio.open_unix_connection(
                sock=ours, limit=self.limits.bridge_line_bytes)
            stdout = self.process.proc.stdout
        self._ready = loop.create_future()
        self._spawn(self._read_bridge(reader))
        self._spawn(self.stdout.drain(stdout))
        self._spawn(self.stderr.drain(self.process.proc.stderr))
        self._timer = loop.call_later(self.limits.candidate_timeout_s, self._expire)
        try:
            self.info = await asyncio.wait_for(self._ready, START_TIMEOUT_S)
        except BaseException:
            await self.close()
            raise
        self.start_s = time.perf_counter() - t0

    async def load(self, source: str, line_limit: int = LINE_LIMIT,
                   timeout: float = LOAD_TIMEOUT_S) -> None:
        """Compile `source` in the worker; raises `HarnessInvalid` with the reason. A build
        that runs past `timeout` kills the worker."""
        check_source(source, line_limit)
        self._loaded = asyncio.get_running_loop().create_future()
        specs = getattr(self.toolbox, "tool_specs", None)  # the user's tools, for the harness
        await self._send({"op": "load", "source": source, "line_limit": line_limit,
                          "tools": specs() if callable(specs) else []})
        try:
            reply = await asyncio.wait_for(self._loaded, timeout)
        except TimeoutError:
            self._kill(("timeout", "building the graph did not finish"))
            raise HarnessInvalid("build_raised", f"building the graph took over {timeout:g} s") from None
        if isinstance(reply, tuple):  # the worker died while loading
            raise HarnessInvalid("build_raised", f"the worker died while loading: {reply[1]}")
        if not reply.get("ok"):
            raise HarnessInvalid.from_dict(reply["invalid"])
        self.shape = reply.get("graph")

    async def run(self, problem_id: str, inputs: dict[str, Any], timeout: float | None = None,
                  observer: RunObserver | None = None, deadline: float | None = None,
                  ) -> ProblemResult:
        """Run one problem; never raises for harness faults (they are in the outcome). With
        an `observer` (a served run) the worker streams its steps and tags its tool calls.
        Its time is `timeout` plus its waits on the parent's Solver and retriever, up to
        `Limits.problem_wait_s`; a `deadline` (a `time.perf_counter()` reading: its
        evaluation's, see `Limits.round_s`) stops it sooner. Either ends it as a timeout."""
        timeout = self.limits.problem_timeout_s if timeout is None else timeout
        wait_s = self.limits.problem_wait_s(timeout)
        rid = f"{problem_id}#{next(self._ids)}"
        context = copy_context() if getattr(self.toolbox, "tracer", None) is not None else None
        run = ProblemRun(problem_id, asyncio.get_running_loop().create_future(), timeout=timeout,
                         wait_s=wait_s, observer=observer, trace_left=self._trace.problem_bytes,
                         context=context)
        served = {"config": observer.config} if observer is not None else {}
        t0 = run.started
        if self._death is not None:
            return ProblemResult(problem_id, error=self._death[1], error_kind=self._death[0])
        self._runs[rid] = run
        before = await self._usage()
        run.started = time.perf_counter()  # its clock, as the worker's, starts with the run
        try:
            await self._send({"op": "run", "run": rid, "inputs": inputs, "timeout": timeout,
                              "wait_s": wait_s, **served})
            message = await run.wait(GRACE_S, float("inf") if deadline is None else deadline)
        except asyncio.CancelledError:  # the caller gave up (a served run's stream was dropped)
            self._spawn(self._send_quietly({"op": "cancel", "run": rid}))
            raise
        except TimeoutError:
            message = Verdict("timeout", run.late_text(GRACE_S, " and the worker did not answer"))
            with contextlib.suppress(Exception):
                await self._send({"op": "cancel", "run": rid})
        except OSError as exc:  # the worker went away between runs
            message = Verdict(*(self._death or self._gone(exc)))
        finally:
            run.done = True
            self._runs.pop(rid, None)
        result = judged_outcome(problem_id, message, run.calls, time.perf_counter() - t0)
        if before is not None and result.error_kind in (ErrorKind.HARNESS, ErrorKind.TIMEOUT):
            result = named_limit(result, before, await self._usage(), self.limits)
        return result

    def _gone(self, exc: OSError) -> tuple[str, str]:
        """Why the worker is unreachable: the parent's doing only while it closes it."""
        if self._closing:
            return ("infra", f"the worker was closed: {exc}")
        return ("harness", f"the worker went away (its code exited or broke the bridge): {exc}")

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._send({"op": "close"})
            self._writer.close()
        try:
            if self.process is not None:
                await self.process.cleanup()
        finally:  # a cleanup that failed still leaves no reader running and no run waiting
            for task in list(self._tasks):
                task.cancel()
            self._fail_all(("infra", "the worker was closed"))

    # -- internals -------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, object], context: Context | None = None) -> None:
        task = asyncio.get_running_loop().create_task(coro, context=context)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, message: dict[str, Any]) -> None:
        if self._writer is None or self._death is not None:
            raise ConnectionError("the worker is not running")
        # write() queues the whole line (never interleaved); only a full buffer needs drain.
        self._writer.write(encode(message))
        if self._writer.transport.get_write_buffer_size() > DRAIN_ABOVE_BYTES:
            async with self._write_lock:
                await self._writer.drain()

    async def _read_bridge(self, reader: asyncio.StreamReader) -> None:
        """Read the worker's lines until it exits. Whatever a line holds (any size, nesting,
        encoding, or no JSON at all), a bad one kills the worker as the harness's fault and
        ends its problems at once; the reader itself never dies."""
        try:
            while line := await reader.readline():
                try:
                    self._dispatch(decode(line), len(line))
                except (ConnectionError, asyncio.CancelledError):
                    raise
                except BaseException as exc:  # RecursionError, MemoryError, ValueError...
                    detail = f"{type(exc).__name__}: {str(exc)[:200]}"
                    self._kill(("harness", f"the worker broke the bridge protocol ({detail})"))
                    break
        except ValueError as exc:  # a line past the reader's limit
            self._kill(("harness", f"the worker broke the bridge protocol: a line over "
                                   f"{self.limits.bridge_line_bytes} bytes ({str(exc)[:120]})"))
        except ConnectionError:
            pass
        await self._on_exit()

    def _dispatch(self, message: dict[str, Any], size: int) -> None:
        op = message["op"]
        if op == "call":
            run = self._runs.get(str(message.get("run")))
            self._spawn(self._serve_call(message, size), run.context.copy() if run and run.context else None)
        elif op == "result":
            run = self._runs.get(str(message.get("run")))
            if run is not None and not run.future.done():
                run.future.set_result(message)
        elif op == "step":
            run = self._runs.get(str(message.get("run")))
            if run is not None and run.observer is not None and not run.future.done():
                run.observer.step(message)
        elif op == "ready" and self._ready is not None and not self._ready.done():
            self._ready.set_result(message)
        elif op == "loaded" and self._loaded is not None and not self._loaded.done():
            self._loaded.set_result(message)

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            await self._send(message)

    def _expire(self) -> None:
        limit = self.limits.candidate_timeout_s
        self._kill(("timeout", f"wall-clock limit: the candidate ran past its {limit:g} s "
                               "(Limits.candidate_timeout_s)"))

    def abort_start(self, reason: str) -> None:
        """Kill a worker whose imports are still under way (its start then fails with
        `reason`): a pool that closes need not wait seconds for a start nobody will use. A
        worker not yet spawned, or already ready, is left to finish and close as usual."""
        if self.process is not None and self._ready is not None and not self._ready.done():
            self._kill(("infra", reason))

    def _kill(self, reason: tuple[str, str]) -> None:
        if self._death is None:
            self._death = reason
        if self.process is not None:
            self.process.kill()

    async def _on_exit(self) -> None:
        code = None
        if self.process is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                code = await asyncio.wait_for(self.process.proc.wait(), 5)
        limit_hit = getattr(self.process, "limit_hit", None)
        if self._death is None and limit_hit:
            self._death = ("harness", f"the worker was killed: {limit_hit}")
        if self._death is None and not self._closing:
            self._death = death_verdict(code, await self._usage(), self.limits,
                                        self.stderr.text()[-2000:])
        self._fail_all(self._death or ("infra", "the worker was closed"))

    async def _usage(self) -> Usage | None:
        """The candidate's cgroup counters, read in a thread (None without a cgroup)."""
        usage = getattr(self.process, "usage", None)
        return await asyncio.to_thread(usage) if callable(usage) else None

    def _fail_all(self, reason: tuple[str, str]) -> None:
        kind, text = reason
        if self._ready is not None and not self._ready.done():
            why = f"the worker did not start: {text}\n{self.stderr.text()[-2000:]}"
            self._ready.set_exception(RuntimeError(why))
        if self._loaded is not None and not self._loaded.done():
            self._loaded.set_result(reason)
        for run in self._runs.values():
            if not run.future.done():
                run.future.set_result(Verdict(kind, text))
