"""The sandbox worker: `python -m harness_learning.harnesses.sandbox.worker`, started by a
backend.

It applies its own rlimits before reading any harness source, imports LangGraph while it waits
(so a pooled worker is warm), then compiles the source it is sent and runs problems, each in
its own thread. Every `tools.*` call goes to the parent over the bridge socket and waits for
its reply; calls of different problems are in flight at once. Each run executes its own copy
of the module under a unique file name, so a watchdog can find the threads running that
problem's code and raise `ProblemTimeout` in them when its time is up.
"""

from __future__ import annotations

import contextvars
import ctypes
import itertools
import json
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness_learning.harnesses.sandbox import graph_shape
from harness_learning.harnesses.sandbox.bridge_tools import BridgeTools
from harness_learning.harnesses.sandbox.protocol import (
    BRIDGE_FD_ENV,
    LIMITS_ENV,
    REPLY_ERRORS,
    WAIT_OPS,
    BudgetAbort,
    Cancelled,
    InfraAbort,
    ProblemTimeout,
    ToolError,
    decode,
    encode,
)

CURRENT_RUN: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "harness_run", default=None
)
RECURSION_LIMIT = graph_shape.DEFAULT_RECURSION_LIMIT


def apply_limits(limits: dict[str, Any]) -> None:
    """rlimits of this process and everything it forks; only ever lowered."""
    mb = 1024 * 1024
    cpu = int(limits["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))  # SIGXCPU first, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get("nproc"):  # set by the backend only where no pids cgroup bounds processes
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"],) * 2)


@dataclass
class RunState:
    rid: str
    inputs: dict[str, Any]
    deadline: float
    filename: str
    config: dict[str, Any] | None = None
    """Set for a served run: its config, and the state is streamed after each step."""
    wait_s: float = 0.0
    """How long its calls in `WAIT_OPS` may wait on the parent off its clock, in all."""
    done: bool = False
    abort: tuple[str, str] | None = None
    pending: set[int] = field(default_factory=set)
    waiting: set[int] = field(default_factory=set)
    injected: int = 0
    waited: float = 0.0
    paused_since: float | None = None
    clock: threading.Lock = field(default_factory=threading.Lock)

    def pause(self, call_id: int, off_clock: bool) -> None:
        """A call is in flight; for a call the parent serves (`off_clock`: the Solver, the
        retriever) the problem's clock stops, as a slow or busy endpoint is not the harness's
        fault, but only for `wait_s` in all. A `tools.python` run counts."""
        with self.clock:
            self.pending.add(call_id)
            if off_clock:
                if not self.waiting:
                    self.paused_since = time.monotonic()
                self.waiting.add(call_id)

    def unpause(self, call_id: int) -> None:
        with self.clock:
            self.pending.discard(call_id)
            if call_id in self.waiting:
                self.waiting.discard(call_id)
                if not self.waiting and self.paused_since is not None:
                    self.waited += time.monotonic() - self.paused_since
                    self.paused_since = None

    def late(self, now: float) -> bool:
        """Past its limit: its own time plus its waits on the parent, as far as `wait_s`."""
        with self.clock:
            waited = self.waited + (0.0 if self.paused_since is None else now - self.paused_since)
            return not self.done and now > self.deadline + min(waited, self.wait_s)


class Bridge:
    """The worker's end of the socket: thread-safe sends, replies matched to calls by id."""

    def __init__(self, write_fd: int, max_args_bytes: int = 1 << 62) -> None:
        self.write_fd = write_fd
        self.max_args_bytes = max_args_bytes
        """The parent refuses larger arguments (`Limits.tool_arg_bytes`); refusing them here
        too saves sending them and gives harness code the same ToolError at once."""
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.waiting: dict[int, tuple[threading.Event, list]] = {}

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else encode(message)
        view = memoryview(data)
        with self.lock:
            while view:
                view = view[os.write(self.write_fd, view):]

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        run = CURRENT_RUN.get()
        if run is None:
            raise ToolError(f"tools.{tool} called outside a problem (from a thread the harness "
                            "started itself, or while building the graph)")
        if run.done:
            raise Cancelled(f"problem {run.rid} is over")
        if rough_size(args, self.max_args_bytes) > self.max_args_bytes:
            raise ToolError(f"the arguments of tools.{tool} take over {self.max_args_bytes} "
                            "bytes (Limits.tool_arg_bytes)")
        call_id = next(self.ids)
        data = encode({"op": "call", "id": call_id, "run": run.rid, "tool": tool, "args": args,
                       **(graph_shape.where_called() if run.config is not None else {})})
        if len(data) > self.max_args_bytes:
            raise ToolError(f"the arguments of tools.{tool} take {len(data)} bytes, over the "
                            f"{self.max_args_bytes} allowed (Limits.tool_arg_bytes)")
        event, slot = threading.Event(), []
        self.waiting[call_id] = (event, slot)
        run.pause(call_id, tool in WAIT_OPS)
        try:
            self.send(data)
            event.wait()
        finally:
            run.unpause(call_id)
            self.waiting.pop(call_id, None)
        reply = slot[0]
        if reply.get("ok"):
            return reply.get("result")
        kind, error = reply.get("kind", "tool"), str(reply.get("error", ""))
        if kind in ("infra", "budget") and run.abort is None:
            run.abort = (kind, error)  # sticky: catching the exception does not undo it
        raise REPLY_ERRORS.get(kind, ToolError)(error)

    def resolve(self, call_id: int, reply: dict[str, Any]) -> None:
        entry = self.waiting.get(call_id)
        if entry is not None:
            entry[1].append(reply)
            entry[0].set()


def rough_size(value: object, stop: int) -> int:
    """About how many bytes `value` takes as JSON (strings by length); stops counting past
    `stop`, so a huge argument is refused without encoding it."""
    total, todo = 0, [value]
    while todo and total <= stop:
        item = todo.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
        else:
            total += 8
    return total


class HarnessHost:
    """The child side of a worker: holds the loaded harness and runs its problems, one thread
    each, answering the parent's `load`/`run`/`cancel` messages. (The parent's handle on this
    process is `harnesses.sandbox.client.Worker`.)"""

    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        self.tools = BridgeTools(bridge)
        self.source: str | None = None
        self.runs: dict[str, RunState] = {}
        self.lock = threading.Lock()

    def load(self, message: dict[str, Any]) -> None:
        from harness_learning.harnesses.compiler import HarnessInvalid, compile_harness

        specs = message.get("tools")
        self.tools._specs = [s for s in specs if isinstance(s, dict) and isinstance(
            s.get("name"), str)] if isinstance(specs, list) else []
        try:
            shape: list[dict[str, Any]] = []
            compile_harness(message["source"], self.tools, int(message["line_limit"]),
                            on_compiled=lambda graph: shape.append(graph_shape.describe(graph)))
        except HarnessInvalid as exc:
            self.bridge.send({"op": "loaded", "ok": False, "invalid": exc.to_dict()})
            return
        self.source = message["source"]
        self.bridge.send({"op": "loaded", "ok": True, "graph": shape[0]})

    def start_run(self, message: dict[str, Any]) -> None:
        rid = str(message["run"])
        config = message.get("config")
        run = RunState(rid, dict(message["inputs"]), time.monotonic() + float(message["timeout"]),
                       f"<harness run {rid}>", graph_shape.run_config(config) if isinstance(config, dict)
                       else None, wait_s=float(message.get("wait_s", 0.0)))
        with self.lock:
            self.runs[rid] = run
        ctx = contextvars.Context()
        thread = threading.Thread(target=ctx.run, args=(self.execute, run), daemon=True,
                                  name=f"run-{rid}")
        thread.start()

    def execute(self, run: RunState) -> None:
        from harness_learning.harnesses.compiler import (
            HarnessInvalid,
            answer_of,
            build,
            harness_module,
            harness_traceback,
        )

        CURRENT_RUN.set(run)
        outcome: dict[str, Any]
        try:
            if self.source is None:
                raise RuntimeError("run before load")
            with harness_module(self.source, run.filename) as module:
                graph = build(module, self.tools)
                if run.config is None:
                    output = graph.invoke(run.inputs, config={"recursion_limit": RECURSION_LIMIT})
                else:
                    output = graph_shape.stream_steps(graph, run.inputs, run.config,
                                          lambda m: self.bridge.send({**m, "run": run.rid}))
                outcome = {"answer": answer_of(output)}
        except HarnessInvalid as exc:
            outcome = {"error": str(exc), "error_kind": "harness", "traceback": exc.traceback}
        except (ProblemTimeout, Cancelled) as exc:
            outcome = {"error": f"{type(exc).__name__}: {exc}", "error_kind": "timeout"}
        except (InfraAbort, BudgetAbort) as exc:
            kind = "infra" if isinstance(exc, InfraAbort) else "budget"
            outcome = {"error": str(exc), "error_kind": kind}
        except MemoryError as exc:  # the address-space rlimit: name it, not just the exception
            text, _ = harness_traceback(exc)
            outcome = {"error": f"memory limit: the worker reached its address space "
                                f"(Limits.memory_mb): MemoryError: {exc}",
                       "error_kind": "memory", "traceback": text}
        except BaseException as exc:  # the harness raised: its fault, with its traceback
            text, _ = harness_traceback(exc)
            outcome = {"error": f"{type(exc).__name__}: {exc}", "error_kind": "harness",
                       "traceback": text}
        if run.abort is not None:  # an infra/budget stop wins even if the harness caught it
            outcome = {"error": run.abort[1], "error_kind": run.abort[0],
                       "traceback": outcome.get("traceback")}
        self.finish(run, outcome)

    def finish(self, run: RunState, outcome: dict[str, Any]) -> None:
        with self.lock:
            if run.done:
                return
            run.done = True
        for call_id in list(run.pending):
            self.bridge.resolve(call_id, {"ok": False, "kind": "cancelled", "error": "run over"})
        self.bridge.send({"op": "result", "run": run.rid, **outcome})

    def cancel(self, rid: str, reason: str = "cancelled by the parent") -> None:
        run = self.runs.get(rid)
        if run is not None:
            self.finish(run, {"error": reason, "error_kind": "timeout"})

    def watchdog(self) -> None:
        """Time out late runs; keep raising `ProblemTimeout` in threads still running a
        finished run's code (a tight loop ignores one exception only if it catches it)."""
        while True:
            time.sleep(0.05)
            now = time.monotonic()
            with self.lock:
                runs = list(self.runs.values())
            for run in runs:
                if run.late(now):
                    self.finish(run, {"error": "wall-clock limit: the problem ran past its "
                                               "time (Limits.problem_timeout_s, its tools.python "
                                               "runs included; its Solver and retriever waits "
                                               "count past Limits.problem_wait_factor x that)",
                                      "error_kind": "timeout"})
                if run.done and run.injected < 100 and interrupt(run.filename):
                    run.injected += 1
                elif run.done:
                    with self.lock:
                        self.runs.pop(run.rid, None)


def interrupt(filename: str) -> bool:
    """Raise ProblemTimeout in every thread whose stack holds code from `filename`."""
    hit = False
    for tid, frame in sys._current_frames().items():
        f = frame
        while f is not None:
            if f.f_code.co_filename == filename:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(tid), ctypes.py_object(ProblemTimeout)
                )
                hit = True
                break
            f = f.f_back
    return hit


def open_bridge(spec: str) -> tuple[int, int]:
    """The bridge's read and write fds: an inherited socket, or (in a container) private
    copies of stdin/stdout, with fd 1 then pointed at stderr so prints cannot reach the bridge."""
    if spec != "stdio":
        fd = int(spec)
        os.set_inheritable(fd, False)  # programs the harness starts do not get the bridge
        return fd, fd
    read_fd, write_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    return read_fd, write_fd


def serve(read_fd: int, write_fd: int, import_s: float, max_args_bytes: int) -> None:
    bridge = Bridge(write_fd, max_args_bytes)
    worker = HarnessHost(bridge)
    threading.Thread(target=worker.watchdog, daemon=True, name="watchdog").start()
    bridge.send({"op": "ready", "pid": os.getpid(), "import_s": import_s})
    for line in os.fdopen(read_fd, "rb"):
        message = decode(line)
        op = message["op"]
        if op == "reply":
            bridge.resolve(int(message["id"]), message)
        elif op == "run":
            worker.start_run(message)
        elif op == "load":
            worker.load(message)
        elif op == "cancel":
            worker.cancel(str(message["run"]))
        elif op == "close":
            break


def main() -> None:
    limits = json.loads(os.environ.pop(LIMITS_ENV))
    apply_limits(limits)
    read_fd, write_fd = open_bridge(os.environ.pop(BRIDGE_FD_ENV))
    from harness_learning.harnesses.compiler import mark_worker_process

    mark_worker_process()
    t0 = time.perf_counter()
    import langgraph.graph  # noqa: F401  (warm: the import is most of a cold start)
    import typing_extensions  # noqa: F401

    import harness_learning.harnesses.contract  # noqa: F401  (Passage, ExecResult for tool results)

    try:
        serve(read_fd, write_fd, time.perf_counter() - t0,
              int(limits.get("tool_arg_bytes", 1 << 62)))
    finally:
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
