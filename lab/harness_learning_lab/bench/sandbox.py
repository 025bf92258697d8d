"""Sandbox figures: the launch cost of one sandboxed process with and without the seccomp
filter and the candidate cgroup, cold and warm worker start, bridge round trip per call,
call overlap.

    python -m harness_learning_lab.bench.sandbox [--calls 300] [--starts 3] [--launches 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from harness_learning.harnesses.sandbox import Limits, ToolReply, Worker, WorkerPool, sandbox_info
from harness_learning.harnesses.seeds import seed_source

PING = """
import time
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

class State(TypedDict, total=False):
    question: str
    answer: str

def build_graph(tools):
    def node(state):
        laps = []
        for _ in range(int(state["question"])):
            t0 = time.perf_counter()
            tools.llm("ping")
            laps.append(time.perf_counter() - t0)
        return {"answer": ",".join(f"{x:.6f}" for x in laps)}
    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g
"""


def probe_limits(pings: int) -> Limits:
    """Default limits, with the per-problem call caps raised to fit a probe of `pings` calls
    (a probe is one long problem of pings)."""
    cap = max(pings, 1)
    return Limits(llm_calls_per_problem=cap, tool_calls_per_problem=cap)


class Instant:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    async def call(self, tool: str, args: dict) -> ToolReply:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return ToolReply("Answer: pong")


async def launch_ms(launches: int) -> dict[str, float]:
    """Median ms to start a sandboxed `python -c pass` and see it exit, per configuration:
    the protections added here (seccomp, cgroup) against bubblewrap and rlimits alone."""
    from harness_learning.harnesses.sandbox.local import LocalBackend

    limits = Limits()
    env = {"HARNESS_LIMITS": json.dumps(limits.to_dict())}
    configs = {"bwrap_rlimits_only": (False, False), "with_seccomp": (True, False),
               "with_cgroup": (False, True), "with_seccomp_and_cgroup": (True, True)}
    samples: dict[str, list[float]] = {name: [] for name in configs}
    backends = {}
    for name, (filtered, grouped) in configs.items():
        backend = LocalBackend(use_cgroup=grouped)
        backend.use_seccomp = backend.use_seccomp and filtered
        backends[name] = backend
    for _ in range(launches):  # interleaved, so a busy moment hits every configuration
        for name, backend in backends.items():
            t0 = time.perf_counter()
            proc = await backend.spawn(["-c", "pass"], limits, env)
            await proc.proc.wait()
            samples[name].append(time.perf_counter() - t0)
            await proc.cleanup()
    return {name: round(statistics.median(xs) * 1000, 1) for name, xs in samples.items()}


async def measure(calls: int, starts: int, launches: int = 15) -> dict:
    limits = probe_limits(calls)
    cold = []
    for _ in range(starts):
        worker = Worker(Instant(), limits)
        await worker.start()
        cold.append(worker.start_s)
        await worker.close()
    warm = []
    async with WorkerPool(size=1, limits=limits) as pool:
        for _ in range(starts):
            await asyncio.gather(*pool._starting)  # the replacement has finished its imports
            t0 = time.perf_counter()
            worker = await pool.acquire(Instant())
            warm.append(time.perf_counter() - t0)
            await worker.close()
        worker = await pool.acquire(Instant())
        async with worker:
            await worker.load(PING)
            out = await worker.run("ping", {"question": str(calls)})
            laps = sorted(float(x) for x in out.answer.split(","))
            handler = sorted(c.latency_s for c in out.calls)
        worker = await pool.acquire(Instant(delay_s=0.5))
        async with worker:
            await worker.load(seed_source("reasoning_direct"))
            t0 = time.perf_counter()
            await asyncio.gather(*(worker.run(f"p{i}", {"question": "q"}) for i in range(16)))
            overlap = time.perf_counter() - t0
    ms = 1000.0
    return {
        "protections": sandbox_info(),
        "launch_ms_median": await launch_ms(launches),
        "cold_start_ms_median": statistics.median(cold) * ms,
        "warm_acquire_ms_median": statistics.median(warm) * ms,
        "bridge_round_trip_ms_p50": laps[len(laps) // 2] * ms,
        "bridge_round_trip_ms_p90": laps[int(len(laps) * 0.9)] * ms,
        "parent_handler_ms_p50": handler[len(handler) // 2] * ms,
        "sixteen_calls_of_500ms_s": overlap,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--launches", type=int, default=15)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.calls, args.starts, args.launches)), indent=2))


if __name__ == "__main__":
    main()
