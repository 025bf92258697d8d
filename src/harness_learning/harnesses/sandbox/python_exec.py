"""`tools.python`: run Solver-written code in a fresh sandbox process of the worker's kind."""

from __future__ import annotations

import asyncio
import json
import subprocess

from harness_learning.harnesses.contract import ExecResult
from harness_learning.harnesses.sandbox.backend import SandboxBackend
from harness_learning.harnesses.sandbox.kills import exit_verdict
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox.protocol import LIMITS_ENV
from harness_learning.harnesses.sandbox.records import CappedOutput

RUNNER = """\
import json, linecache, os, resource, sys
L = json.loads(os.environ.pop("HARNESS_LIMITS"))
mb = 1024 * 1024
resource.setrlimit(resource.RLIMIT_CPU, (L["cpu_s"], L["cpu_s"] + 1))
resource.setrlimit(resource.RLIMIT_AS, (L["memory_mb"] * mb,) * 2)
resource.setrlimit(resource.RLIMIT_FSIZE, (L["file_size_mb"] * mb,) * 2)
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
if L.get("nproc"):
    resource.setrlimit(resource.RLIMIT_NPROC, (L["nproc"],) * 2)
src = sys.stdin.read()
sys.stdin = open(os.devnull)
linecache.cache["<solver>"] = (len(src), None, src.splitlines(True), "<solver>")
del json, linecache, os, resource, L, mb
exec(compile(src, "<solver>", "exec"), {"__name__": "__main__"})
"""


async def run_python(
    code: str, timeout: float | None = None, limits: Limits | None = None,
    backend: SandboxBackend | None = None,
) -> ExecResult:
    """Run `code` with a wall-clock limit; return its stdout (capped) and its error text
    (traceback, or the limit it hit). Never raises for faults of the code itself."""
    from harness_learning.harnesses.sandbox.backend import default_backend

    limits = (limits or Limits()).for_python(timeout)
    backend = backend or await asyncio.to_thread(default_backend)  # may probe the machine
    env = {LIMITS_ENV: json.dumps(limits.to_dict())}
    proc = await backend.spawn(["-c", RUNNER], limits, env, stdin=subprocess.PIPE)
    out, err = CappedOutput(limits.output_bytes), CappedOutput(limits.output_bytes)

    async def pump() -> int:
        async def feed() -> None:
            try:
                proc.proc.stdin.write(code.encode("utf-8", "replace"))
                await proc.proc.stdin.drain()
                proc.proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass

        await asyncio.gather(feed(), out.drain(proc.proc.stdout), err.drain(proc.proc.stderr))
        return await proc.proc.wait()

    try:
        code_rc = await asyncio.wait_for(pump(), limits.python_timeout_s)
    except TimeoutError:
        await proc.cleanup()
        return ExecResult(out.text(), f"timed out after {limits.python_timeout_s:g} s\n{err.text()}".rstrip())
    usage = getattr(proc, "usage", None)
    used = await asyncio.to_thread(usage) if callable(usage) else None  # before cleanup
    await proc.cleanup()
    if code_rc == 0:
        return ExecResult(out.text(), None)
    error = err.text().strip() or f"exited with code {code_rc}"
    verdict = exit_verdict(code_rc, used, limits, "the program", "Limits.python_memory_mb "
                           "(or its candidate's Limits.memory_mb)")
    if verdict is not None:
        error = f"{verdict[1]}\n{error}".rstrip()
    elif code_rc < 0:
        error = f"killed by signal {-code_rc} (a resource limit?)\n{error}".rstrip()
    return ExecResult(out.text(), error)
