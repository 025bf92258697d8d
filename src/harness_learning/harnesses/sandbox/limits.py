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

    A problem's wall time counts everything its code does, its `tools.python` runs included
    (each run's own wall limit is its `timeout`, capped by the problem's time left). The
    clock stops only while the parent serves its Solver, retriever and user-tool calls (a
    busy endpoint is not the harness's fault), and for at most `problem_wait_factor` x
    `problem_timeout_s` in all (`problem_wait_s`): past that, waiting counts too. So no
    problem holds its worker past `problem_timeout_s` plus its bounded waits, and no
    evaluation holds a round past `round_s` (its problems' times and waits added up).
    `llm_calls_per_problem` caps its Solver calls (the bill) and `tool_calls_per_problem` all
    its tool calls; past either, the problem ends as the harness's fault.

    Per candidate (one cgroup holds the worker and every process it or its `tools.python`
    calls start, where a cgroup can be made): `memory_mb` bounds their memory together (tmpfs
    pages written count), `pids` their processes and threads, `cpu_cores` their CPU share; a
    `tools.python` process has its own `python_memory_mb` inside that, and at most
    `python_concurrency` of them run at once per candidate (more wait their turn). `shm_mb`
    sizes the sandbox's /dev/shm.

    The bridge: a tool call whose arguments take more than `tool_arg_bytes` (as JSON) is
    refused in the parent before it is made, a result over `tool_result_bytes` is refused
    too, and a bridge line longer than `tool_arg_bytes` plus 1 MiB kills the worker as a
    protocol violation. Stored traces keep at most `trace_arg_chars` of each argument or
    result string, with the original size recorded.

    The stored trace is bounded in bytes too, because strings just under `trace_arg_chars`
    still add up (hundreds of calls, each with many of them, made a 128 MB trace per
    problem): one call's record takes at most about `trace_call_bytes` (past it its arguments
    and result keep the head of their JSON), one problem's trace `trace_problem_bytes` and all
    of a candidate's traces `trace_candidate_bytes` (past either, each further call keeps a
    stub of a few hundred bytes: tool, tokens, latency, failure kind, the head of its error).
    Calls are cut as they arrive, so the parent's memory per problem stays bounded; what is cut
    is counted (`ProblemResult.trace_bytes_cut`, `meta["trace_cut"]` on the call).
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
    problem_wait_factor: float = 4.0
    shm_mb: int = 16
    cpu_cores: float = 1.0
    python_concurrency: int = 2
    tool_arg_bytes: int = 512 * 1024
    tool_result_bytes: int = 1024 * 1024
    trace_arg_chars: int = 16 * 1024
    trace_call_bytes: int = 256 * 1024
    trace_problem_bytes: int = 4 * 1024 * 1024
    trace_candidate_bytes: int = 64 * 1024 * 1024

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
            problem_wait_factor=self.problem_wait_factor,
            shm_mb=min(self.shm_mb, 16), cpu_cores=min(self.cpu_cores, 1.0),
            python_concurrency=self.python_concurrency, tool_arg_bytes=self.tool_arg_bytes,
            tool_result_bytes=self.tool_result_bytes, trace_arg_chars=self.trace_arg_chars,
            trace_call_bytes=self.trace_call_bytes, trace_problem_bytes=self.trace_problem_bytes,
            trace_candidate_bytes=self.trace_candidate_bytes,
        )

    def problem_wait_s(self, timeout_s: float | None = None) -> float:
        """How long a problem with `timeout_s` (default `problem_timeout_s`) may wait on the
        parent's Solver and retriever off its clock, in all."""
        return self.problem_wait_factor * (timeout_s or self.problem_timeout_s)

    def round_s(self, problems: int, timeout_s: float | None = None) -> float:
        """The longest an evaluation of `problems` may take from its first run: each problem's
        time and its bounded waits, one after another (concurrency only makes it shorter)."""
        timeout_s = timeout_s or self.problem_timeout_s
        return problems * (timeout_s + self.problem_wait_s(timeout_s))

    @property
    def bridge_line_bytes(self) -> int:
        """The longest bridge line the parent reads; past it the worker is killed."""
        return self.tool_arg_bytes + (1 << 20)

    def to_dict(self) -> dict:
        return asdict(self)
