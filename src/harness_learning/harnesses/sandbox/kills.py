"""Which limit ended a sandbox process, named by resource: memory, processes, CPU time or wall
time, each as the problem's error kind and in its error text with the `Limits` setting to raise.

A worker that dies by SIGKILL tells nothing by itself: the memory cgroup's OOM killer, a
process limit that broke the worker's own threads and the parent's own kill all look alike.
The candidate's cgroup counts each (`cgroups.Usage`, read from the v1 or the v2 files), so the
parent names the limit from those counts; only where none moved does the kill stay unexplained.
Every one of these is the harness's doing (its code used the resource): scored 0, never
unscored.
"""

from __future__ import annotations

import dataclasses
import signal

from harness_learning.harnesses.results import ErrorKind, ProblemResult
from harness_learning.harnesses.sandbox.cgroups import Usage
from harness_learning.harnesses.sandbox.limits import Limits

KILLED = {-signal.SIGKILL, 128 + signal.SIGKILL}
"""Exit codes of a SIGKILL death: the process's own, or as bubblewrap relays it (128 + sig)."""
OUT_OF_CPU = {-signal.SIGXCPU, 128 + signal.SIGXCPU}


def memory_text(limits: Limits, what: str, setting: str = "Limits.memory_mb") -> str:
    return (f"memory limit: the processes of the group together reached {setting} "
            f"({limits.memory_mb} MB) and the kernel {what}")


def pids_text(limits: Limits) -> str:
    return (f"process limit: the candidate reached Limits.pids ({limits.pids} processes and "
            f"threads together), so the kernel refused it more")


def cpu_text(limits: Limits) -> str:
    return (f"CPU limit: the process used its Limits.cpu_s ({limits.cpu_s} s of CPU time) and "
            "the kernel killed it")


def exit_verdict(code: int | None, usage: Usage | None, limits: Limits,
                 what: str = "the worker", setting: str = "Limits.memory_mb",
                 ) -> tuple[str, str] | None:
    """(error kind, error) of a process that exited with `code` when its group's counters
    read `usage` (None: no cgroup), or None where the exit names no limit. `setting` names
    the memory limit `limits.memory_mb` came from (a `tools.python` call has its own)."""
    used = usage or Usage()
    if used.oom_kills:
        return ErrorKind.MEMORY, memory_text(limits, f"killed {what} (out of memory)", setting)
    if code in OUT_OF_CPU:
        return ErrorKind.TIMEOUT, cpu_text(limits)
    if code in KILLED:
        if used.memory_capped:
            return ErrorKind.MEMORY, memory_text(limits, f"killed {what}", setting)
        if used.pids_capped:
            return ErrorKind.PIDS, pids_text(limits) + f"; {what} was killed"
        return None
    if code not in (0, None) and used.pids_capped:
        return ErrorKind.PIDS, pids_text(limits) + f"; {what} exited with code {code}"
    return None


def death_verdict(code: int | None, usage: Usage | None, limits: Limits,
                  stderr_tail: str) -> tuple[str, str]:
    """Why the worker died on its own (the parent did not kill it): a named limit, else a
    SIGKILL no counter explains, else its exit code and the tail of its stderr."""
    verdict = exit_verdict(code, usage, limits)
    if verdict is not None:
        return verdict
    if code in KILLED:
        return (ErrorKind.TIMEOUT, "the worker was killed by SIGKILL, and no limit of its "
                "candidate's cgroup was reached")
    return ErrorKind.HARNESS, f"the worker exited with code {code}: {stderr_tail}"


def run_verdict(kind: str | None, error: str | None, before: Usage, after: Usage,
                limits: Limits) -> tuple[str, str] | None:
    """A problem that ended as the harness's fault while one of its candidate's limits was
    reached (between `before` and `after`) failed because of that limit: (kind, error) naming
    it, with the harness's own error after it; a timeout says whether the CPU share throttled
    the candidate meanwhile. None where no counter moved."""
    if kind == ErrorKind.TIMEOUT and after.cpu_throttled > before.cpu_throttled:
        return kind, (f"{error} (meanwhile the candidate's CPU share, Limits.cpu_cores = "
                      f"{limits.cpu_cores:g}, throttled it in "
                      f"{after.cpu_throttled - before.cpu_throttled} periods)")
    if kind != ErrorKind.HARNESS:
        return None
    if after.oom_kills > before.oom_kills or after.memory_capped > before.memory_capped:
        what = "killed one of its processes" if after.oom_kills > before.oom_kills else \
            "refused it more"
        return ErrorKind.MEMORY, f"{memory_text(limits, what)}: {error}"
    if after.pids_capped > before.pids_capped:
        return ErrorKind.PIDS, f"{pids_text(limits)}: {error}"
    return None


def named_limit(result: ProblemResult, before: Usage, after: Usage | None,
                limits: Limits) -> ProblemResult:
    """`result` with the candidate limit that caused its failure named (`run_verdict`)."""
    verdict = None if after is None else run_verdict(result.error_kind, result.error, before,
                                                     after, limits)
    if verdict is None:
        return result
    return dataclasses.replace(result, error_kind=verdict[0], error=verdict[1])
