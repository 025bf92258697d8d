"""How the parent serves one worker's tool calls: the checks before a call (the run's call
caps, its clock, the argument cap), the call itself in the candidate's python slots and
cgroup, and its record in the problem's trace.

A mixin of `client.Worker`, kept apart so the worker's life cycle (start, load, run, close)
and the serving of its calls each read on their own; it uses the worker's state named below.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine
from contextvars import Context
from typing import Any

from harness_learning.harnesses.contract import BRIDGE_OPS, SOLVER_OPS, ToolCall
from harness_learning.harnesses.sandbox.backend import SandboxProcess
from harness_learning.harnesses.sandbox.cgroups import CANDIDATE_GROUP
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.problem_run import ProblemRun
from harness_learning.harnesses.sandbox.protocol import WAIT_OPS, encode
from harness_learning.harnesses.sandbox.records import ToolHandler, Verdict, failure_kind
from harness_learning.harnesses.sandbox.trace import TraceBounds

CALL_ENVELOPE_BYTES = 4096
"""What a call line carries besides its arguments (op, ids, tool name)."""


class ServedCalls:
    """The tool-call half of a sandbox worker's handle (see the module docstring)."""

    toolbox: ToolHandler | None
    limits: Limits
    process: SandboxProcess | None
    _runs: dict[str, ProblemRun]
    _trace: TraceBounds
    _python_gate: asyncio.Semaphore

    def _spawn(self, coro: Coroutine[Any, Any, object], context: Context | None = None) -> None:
        raise NotImplementedError

    async def _send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _serve_call(self, message: dict[str, Any], size: int) -> None:
        call_id, tool = message.get("id"), str(message.get("tool"))
        if not isinstance(call_id, int):
            return
        args = message.get("args") if isinstance(message.get("args"), dict) else {}
        rid = str(message.get("run"))
        run = self._runs.get(rid)
        if run is not None and not run.done:
            self._count_call(rid, run, tool)
            self._check_time(rid, run)
        if run is None or run.done or run.future.done():
            over = "no such run" if run is None else "the run is over"
            reply: dict[str, Any] = {"ok": False, "kind": "cancelled", "error": over}
        elif tool not in BRIDGE_OPS or self.toolbox is None:
            reply = {"ok": False, "kind": "tool", "error": f"no tool {tool!r} is available"}
        elif size - CALL_ENVELOPE_BYTES > self.limits.tool_arg_bytes:
            reply = {"ok": False, "kind": "tool",
                     "error": f"ToolError: the arguments of tools.{tool} take about {size} bytes, "
                              f"over the {self.limits.tool_arg_bytes} allowed "
                              "(Limits.tool_arg_bytes); the call was not made"}
            self._record(run, tool, args, None, reply["error"], 0.0, meta={"kind": "tool"})
        else:
            reply = await self._call_tool(run, tool, args, message)
            if self._check_time(rid, run):
                reply = {"ok": False, "kind": "cancelled", "error": "the run is over"}
        with contextlib.suppress(Exception):
            await self._send({"op": "reply", "id": call_id, **reply})

    async def _call_tool(self, run: ProblemRun, tool: str, args: dict[str, Any],
                         message: dict[str, Any]) -> dict[str, Any]:
        """Make the call (a `tools.python` call waits for one of the candidate's
        `python_concurrency` slots and lands in its cgroup), check its result's size, record."""
        CANDIDATE_GROUP.set(getattr(self.process, "group", None))
        gate = self._python_gate if tool == "python" else contextlib.nullcontext()
        t0 = time.perf_counter()
        off_clock = tool in WAIT_OPS
        if off_clock:
            run.pause()
        try:
            async with gate:
                default = getattr(self.toolbox, "python_limits", self.limits).python_timeout_s
                call = self.toolbox.call(tool, run.python_args(args, default)
                                         if tool == "python" else args)  # capped by its time
                if run.observer is not None:  # a served run: the caller's callbacks see it
                    call = run.observer.tool_call(tool, args, message.get("node"), call)
                out = await call
            result_bytes = len(encode({"result": out.result}))
            if result_bytes > self.limits.tool_result_bytes:
                error = (f"ToolError: the result of tools.{tool} took {result_bytes} bytes, over "
                         f"the {self.limits.tool_result_bytes} allowed (Limits.tool_result_bytes)")
                self._record(run, tool, args, None, error, time.perf_counter() - t0,
                             out.tokens, meta={**out.meta, "kind": "tool",
                                               "result_bytes": result_bytes})
                return {"ok": False, "kind": "tool", "error": error}
            self._record(run, tool, args, out.result, None, time.perf_counter() - t0,
                         out.tokens, out.cached, out.meta)
            return {"ok": True, "result": out.result}
        except Exception as exc:
            kind = failure_kind(exc)
            error = f"{type(exc).__name__}: {exc}"
            self._record(run, tool, args, None, error, time.perf_counter() - t0, meta={"kind": kind})
            return {"ok": False, "kind": kind, "error": error}
        finally:
            if off_clock:
                run.unpause()

    def _record(self, run: ProblemRun, tool: str, args: dict[str, Any], result: object, error: str | None,
                latency: float, tokens: int = 0, cached: bool = False,
                meta: dict[str, Any] | None = None) -> None:
        """Trace the call, cut to the trace's bounds as it arrives (see `Limits`)."""
        if not run.done:
            run.calls.append(self._trace.store(ToolCall(tool, args, result, error, latency,
                                                        tokens, cached, dict(meta or {})), run))

    def _count_call(self, rid: str, run: ProblemRun, tool: str) -> None:
        """Stop the run past its Solver-call or tool-call cap (see `Limits`)."""
        over = run.count_call(tool in SOLVER_OPS, self.limits)
        if over is not None:
            self._stop_run(rid, run, over)

    def _check_time(self, rid: str, run: ProblemRun) -> bool:
        """Whether the run is over; a call made or ended past the problem's time ends it
        as a timeout, whatever it answers next (the worker's clock may lag a moment)."""
        if not run.done and run.left_s() <= 0:
            self._stop_run(rid, run, run.late_text(), "timeout")
        return run.future.done()

    def _stop_run(self, rid: str, run: ProblemRun, reason: str, kind: str = "harness") -> None:
        """End a run as the harness's fault, whatever its code does next: the parent records
        the reason now and the worker is told to drop the run."""
        if not run.future.done():
            run.future.set_result(Verdict(kind, reason))
        self._spawn(self._send_quietly({"op": "cancel", "run": rid}))

