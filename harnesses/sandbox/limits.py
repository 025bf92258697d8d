"""Resource limits of one sandbox process."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """What a worker (or a `tools.python` process) may use.

    CPU seconds, address space and file size are rlimits of the whole process (all problems of
    a candidate together); `pids` bounds processes *and threads* (each concurrent problem is a
    thread, LangGraph adds pool threads), enforced by a pids cgroup where one is writable;
    `problem_timeout_s` and `candidate_timeout_s` are wall-clock limits (the candidate's worker
    is killed when its time is up); `output_bytes` caps the captured stdout and stderr.
    `scratch_mb` bounds the scratch directory: a tmpfs of that size under bubblewrap and
    Docker (a full scratch is a full disk to the harness); elsewhere the parent measures it
    twice a second and kills the worker past it.

    A problem's clock stops while its tool calls are served (a busy endpoint is not the
    harness's fault), so a harness that keeps calling tools would run until the candidate's
    wall-clock limit: `llm_calls_per_problem` caps its Solver calls (the bill) and
    `tool_calls_per_problem` all its tool calls (the time). Past either, the problem ends as
    the harness's fault.
    """

    cpu_s: int = 600
    memory_mb: int = 3072
    file_size_mb: int = 64
    scratch_mb: int = 256
    pids: int = 256
    problem_timeout_s: float = 300.0
    candidate_timeout_s: float = 3600.0
    output_bytes: int = 64 * 1024
    python_timeout_s: float = 10.0
    python_memory_mb: int = 1024
    llm_calls_per_problem: int = 64
    tool_calls_per_problem: int = 256

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {value!r}")

    def for_python(self, timeout_s: float | None = None) -> Limits:
        """The limits of a `tools.python` process spawned on behalf of this worker."""
        wall = min(timeout_s or self.python_timeout_s, self.problem_timeout_s)
        return Limits(
            cpu_s=max(1, int(wall) + 1), memory_mb=self.python_memory_mb,
            file_size_mb=self.file_size_mb, scratch_mb=min(self.scratch_mb, 64),
            pids=min(self.pids, 16), problem_timeout_s=wall,
            candidate_timeout_s=wall, output_bytes=self.output_bytes,
            python_timeout_s=wall, python_memory_mb=self.python_memory_mb,
            llm_calls_per_problem=self.llm_calls_per_problem,
            tool_calls_per_problem=self.tool_calls_per_problem,
        )

    def to_dict(self) -> dict:
        return asdict(self)
