"""One QA-shaped adaptation round against the simulated endpoint, through the real stack:
8 Proposer samples in parallel, then 8 candidates x 64 problems x 5 Solver calls evaluated at
once by the adapter's `evaluate_cached` (sandbox workers from a pool, the bridge, the toolbox,
the model client with the run's shared response cache, the execution log).

The candidates share their first two Solver calls (same prompts, temperature 0), as candidates
derived from one parent do; the cache and single-flight make those once. The server runs in its
own process, so the parent's CPU time is the adapter's and the model client's alone.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness_learning.evals.problem import Problem
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import InfraStop, evaluate_cached
from harness_learning.graphs.adapter.run import freeze_imports
from harness_learning.harnesses.llm import ModelClient
from harness_learning.harnesses.sandbox import Limits, Worker, WorkerPool
from harness_learning_lab.bench.sandbox import PING, Instant, probe_limits

CALLS = 5
SHARED_CALLS = 2

PROGRAM = '''
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    def solve(state):
        notes = []
        for step in range({shared}):
            notes.append(tools.llm(f"Step {{step}}: read the question. {{state['question']}}"))
        for step in range({shared}, {calls}):
            notes.append(tools.llm(f"Variant {variant}, step {{step}}: {{state['question']}}"))
        return {{"answer": notes[-1].rsplit("Answer:", 1)[-1].strip()}}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
'''


def candidate_source(variant: int) -> str:
    return PROGRAM.format(shared=SHARED_CALLS, calls=CALLS, variant=variant)


class BenchTask:
    """64 QA-shaped questions; the gold is the simulated server's answer to one variant."""

    name, track, seed = "bench", "qa", "reasoning_direct"
    description = "Benchmark questions."

    def __init__(self, n: int) -> None:
        self.items = [Problem(f"q{i:03d}", {"question": f"Who founded city number {i}?"}, "amber")
                      for i in range(n)]

    def dev(self):
        return self.items

    def test(self):
        return []

    def score(self, problem, answer):
        return float(answer.strip() == problem.gold)

    def retriever(self):
        return None


class TimedPool(WorkerPool):
    """A WorkerPool that records how long each `acquire` waited (the candidate's worker start)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.waits: list[float] = []

    async def acquire(self, toolbox=None):
        t0 = time.perf_counter()
        worker = await super().acquire(toolbox)
        self.waits.append(time.perf_counter() - t0)
        return worker


def start_server(latency: float, slots: int, error_rate: float = 0.0) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "harness_learning.harnesses.llm.simserver", "--latency", str(latency),
            "--slots", str(slots), "--error-rate", str(error_rate), "--retry-after", "0.1"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the simulated server did not start: {url!r}")
    return proc, url


async def client_cpu_per_call(url: str, calls: int, concurrency: int, transport: str,
                              latency: float, staggered: bool = True) -> float:
    """CPU seconds of the model client alone per request (unique, uncached calls), under the
    round's traffic shape: `concurrency` chains of sequential requests started at staggered
    moments, so answers arrive one by one as in a round rather than in synchronised waves
    (a wave is served in a few loop turns and makes the client look cheaper: `staggered=False`
    measures that burst shape, for reference)."""
    client = ModelClient(f"openai/sim@{url}?max_concurrency={concurrency}&temperature=0.7"
                         f"&transport={transport}")
    await client.acomplete("warm up")
    per_chain = max(1, calls // concurrency)

    async def chain(i: int) -> None:
        await asyncio.sleep(latency * i / concurrency if staggered else 0.0)
        for j in range(per_chain):
            await client.acomplete(f"calibration {i}.{j}")

    t0 = time.process_time()
    await asyncio.gather(*(chain(i) for i in range(concurrency)))
    spent = (time.process_time() - t0) / (per_chain * concurrency)
    await client.aclose()
    return spent


async def bridge_laps(problems: int, calls: int) -> list[float]:
    """Round trips of `tools.llm` through the bridge with an instant toolbox, all in flight."""
    async with Worker(Instant(), probe_limits(calls)) as worker:
        await worker.load(PING)
        outs = await asyncio.gather(*(worker.run(f"p{i}", {"question": str(calls)})
                                      for i in range(problems)))
    failed = [o.error for o in outs if o.error]
    if failed:
        raise RuntimeError(f"the bridge probe failed: {failed[0]}")
    return sorted(float(x) for o in outs for x in (o.answer or "").split(",") if x)


def _bench_context(url: str, candidates: int, problems: int, slots: int, run_dir: Path,
                   transport: str) -> tuple[AdapterContext, TimedPool]:
    """The adapter's context for one round against the simulated endpoint at `url`."""
    config = AdaptConfig(task="bench", run_dir=str(run_dir), candidates=candidates,
                         selection=problems, concurrency=problems, policy="best_valid",
                         solver=f"openai/sim@{url}?max_concurrency={slots}&backoff_s=0.05"
                                f"&transport={transport}",
                         proposer=f"openai/sim-proposer@{url}?max_concurrency={candidates}"
                                  f"&transport={transport}",
                         ).with_track_defaults("qa")
    limits = Limits()
    pool = TimedPool(size=candidates, limits=limits)
    return (AdapterContext.from_config(config, task=BenchTask(problems), pool=pool,
                                       limits=limits), pool)


async def run_round(url: str, latency: float, candidates: int, problems: int, slots: int,
                    run_dir: Path, transport: str = "direct") -> dict:
    """One round of `candidates` proposals, each judged on `problems` selection problems, as
    the adapter runs it; its wall time against the ideal and the lower bound."""
    ctx, pool = _bench_context(url, candidates, problems, slots, run_dir, transport)
    await asyncio.to_thread(ctx.store.init_run, {"bench": "round"})
    items = ctx.task.dev()
    solver = ctx.solver
    await ctx.proposer.acomplete("warm up", temperature=0.7)  # imports litellm, opens the pool
    await solver.acomplete("warm up", temperature=0.7)
    freeze_imports()  # as run_adaptation does
    started = time.perf_counter()
    ctx.pool.fill()  # in the adapter the workers start while the current version is evaluated
    await asyncio.gather(*ctx.pool._starting)
    cold_s = time.perf_counter() - started
    before, proposer_before = solver.stats.snapshot(), ctx.proposer.stats.snapshot()
    cpu0, t0 = time.process_time(), time.perf_counter()

    per_call: list[float] = []

    async def one(index: int) -> float:
        await ctx.proposer.acomplete("Propose an edit.", temperature=0.7, seed=index)
        sha = await ctx.store.aput_version(candidate_source(index), parent=None, round_=1,
                                           note=f"candidate {index}")
        result = await evaluate_cached(ctx, sha, items, "selection", 1)
        for r in result.results:  # the problem's wall time not spent in its own requests
            if r.calls:
                per_call.append((r.latency_s - sum(c.latency_s for c in r.calls)) / len(r.calls))
        return result.mean_score

    got = await asyncio.gather(*(one(i) for i in range(candidates)), return_exceptions=True)
    stops = [g for g in got if isinstance(g, BaseException)]
    if stops and not all(isinstance(g, InfraStop) for g in stops):
        raise next(g for g in stops if not isinstance(g, InfraStop))
    scores = [None if isinstance(g, BaseException) else g for g in got]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await ctx.aclose()
    await solver.aclose()
    await ctx.proposer.aclose()
    after = solver.stats.snapshot()
    proposer_requests = ctx.proposer.stats.snapshot()["requests"] - proposer_before["requests"]
    stats = {k: after[k] - before[k] for k in ("calls", "requests", "cache_hits", "shared",
                                                "retries", "infra_errors", "latency_s")}
    harness_calls = candidates * problems * CALLS
    sent = stats["calls"]
    per_call_latency = stats["latency_s"] / max(1, stats["requests"])
    ideal = (sent / slots + 1 + CALLS) * latency  # the Proposer's call + 5 sequential calls
    return {"latency_s": latency, "wall_s": wall, "ideal_s": ideal,
            "lower_bound_s": max(sent / slots, 1 + CALLS) * latency,
            "naive_s": (harness_calls + candidates) * per_call_latency,
            "harness_calls": harness_calls, "sent": sent, "requests": stats["requests"],
            "proposer_requests": proposer_requests,
            "cache_hits": stats["cache_hits"] + stats["shared"], "retries": stats["retries"],
            "infra_errors": stats["infra_errors"], "parent_cpu_s": cpu,
            "worker_start_ms": [w * 1000 for w in pool.waits],
            "pool_cold_start_s": cold_s,
            "scores": scores, "infra_stops": len(stops), "per_call_latency_s": per_call_latency,
            "wait_per_call_ms_p50": 1000 * statistics.median(per_call) if per_call else None}


async def measure(latency: float, candidates: int, problems: int, slots: int,
                  calibration_calls: int, transport: str, error_rate: float = 0.0) -> dict:
    proc, url = start_server(latency, slots, error_rate)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-round-") as tmp:
            row = await run_round(url, latency, candidates, problems, slots, Path(tmp), transport)
            if error_rate:
                return row | await stored_results(Path(tmp), candidates * problems)
        for name in ("direct", "litellm"):
            row[f"client_cpu_ms_{name}"] = 1000 * await client_cpu_per_call(
                url, calibration_calls, slots, name, latency)
        row["client_cpu_ms_burst"] = 1000 * await client_cpu_per_call(
            url, calibration_calls, slots, transport, latency, staggered=False)
        row["transport"] = transport
        row["client_cpu_ms_per_request"] = row[f"client_cpu_ms_{transport}"]
    finally:
        proc.kill()
        proc.wait()
    requests = row["requests"] + row["proposer_requests"]
    for key, client in (("", "client_cpu_ms_per_request"), ("_burst", "client_cpu_ms_burst")):
        ours = row["parent_cpu_s"] * 1000 - row[client] * requests
        row[f"overhead_cpu_ms_per_call{key}"] = ours / row["harness_calls"]
    row["wall_over_ideal"] = row["wall_s"] / row["ideal_s"]
    row["naive_over_ideal"] = row["naive_s"] / row["ideal_s"]
    return row


async def stored_results(run_dir: Path, expected: int) -> dict:
    """What the run's log holds: results kept, and infra errors scored (must be none)."""
    from harness_learning.harnesses.store import SQLiteLogStore

    store = SQLiteLogStore(run_dir)
    rows = [e.result for e in store.iter_evaluations()]
    store.close()
    return {"expected_results": expected, "stored_results": len(rows),
            "infra_scored": sum(1 for r in rows if r.unscored and r.score is not None)}


def run(latencies=(1.0, 0.1), candidates: int = 8, problems: int = 64, slots: int = 64,
        calibration_calls: int = 320, transport: str = "direct", error_rate: float = 0.2,
        log=print) -> dict:
    rows = []
    for latency in latencies:
        log(f"round at {latency:g} s per call ...")
        rows.append(asyncio.run(measure(latency, candidates, problems, slots, calibration_calls,
                                        transport)))
    faults = None
    if error_rate:
        log(f"round at {latencies[-1]:g} s per call with {error_rate:.0%} endpoint errors ...")
        faults = asyncio.run(measure(latencies[-1], candidates, problems, slots, 0, transport,
                                     error_rate))
    alone = asyncio.run(bridge_laps(1, 200))
    laps = asyncio.run(bridge_laps(problems, 20))
    first, last = rows[0], rows[-1]
    starts = first["worker_start_ms"]
    return {
        "rows": rows, "candidates": candidates, "problems": problems, "slots": slots,
        "wall_over_ideal": first["wall_over_ideal"],
        "wall_over_ideal_stress": last["wall_over_ideal"],
        "naive_over_ideal": first["naive_over_ideal"],
        "cache_hits": first["cache_hits"],
        "worker_start_ms": statistics.median(starts),
        "worker_start_ms_max": max(starts),
        "bridge_p50_ms": 1000 * alone[len(alone) // 2],
        "wait_per_call_ms_p50": first["wait_per_call_ms_p50"],
        "bridge_saturated_ms_p50": 1000 * laps[len(laps) // 2],
        "overhead_cpu_ms_per_call": first["overhead_cpu_ms_per_call"],
        "overhead_cpu_ms_per_call_burst_calibration": first["overhead_cpu_ms_per_call_burst"],
        "client_cpu_ms_burst": first["client_cpu_ms_burst"],
        "client_cpu_ms_per_request": first["client_cpu_ms_per_request"],
        "client_cpu_ms_litellm": first["client_cpu_ms_litellm"],
        "client_cpu_ms_direct": first["client_cpu_ms_direct"],
        "pool_cold_start_s": first["pool_cold_start_s"], "transport": transport,
        "faults": faults,
    }


def table(f: dict) -> str:
    head = (f"one round: {f['candidates']} candidates x {f['problems']} problems x {CALLS} calls "
            f"(first {SHARED_CALLS} shared), simulated endpoint with {f['slots']} slots, "
            f"Solver transport {f['transport']}")
    cols = (f"{'latency':>7} {'wall s':>7} {'ideal s':>7} {'wall/ideal':>10} {'naive s*':>8} "
            f"{'calls':>6} {'sent':>5} {'hits':>5} {'cpu ms/call':>11} {'client ms/req':>13} "
            f"{'ours ms/call':>12} {'score':>5}")
    lines = [head, cols, "-" * len(cols)]
    for r in f["rows"]:
        lines.append(
            f"{r['latency_s']:>6g}s {r['wall_s']:>7.1f} {r['ideal_s']:>7.1f} "
            f"{r['wall_over_ideal']:>10.2f} {r['naive_s']:>8.0f} {r['harness_calls']:>6} "
            f"{r['sent']:>5} {r['cache_hits']:>5} "
            f"{1000 * r['parent_cpu_s'] / r['harness_calls']:>11.2f} "
            f"{r['client_cpu_ms_per_request']:>13.2f} {r['overhead_cpu_ms_per_call']:>12.2f} "
            f"{statistics.mean(x for x in r['scores'] if x is not None):>5.2f}")
    lines += [
        "ideal = calls sent / slots x latency + critical path (1 Proposer + 5 Solver calls); "
        "* naive = a sequential loop, computed: measured latency per call x all calls",
        f"worker start per candidate (pool acquire): median {f['worker_start_ms']:.0f} ms, "
        f"max {f['worker_start_ms_max']:.0f} ms",
        f"bridge round trip (tools.llm to an instant toolbox and back) p50: one call in flight "
        f"{f['bridge_p50_ms']:.2f} ms, {f['problems']} problems calling back to back "
        f"(saturated) {f['bridge_saturated_ms_p50']:.2f} ms",
        f"in the round, a problem's wall time outside its own requests, per call, p50 "
        f"{f['wait_per_call_ms_p50']:.0f} ms: waiting on calls another candidate has in flight "
        "(single-flight cache) and on the endpoint's slots, not bridge cost",
        "ours ms/call = (parent CPU - client CPU per request x Solver and Proposer requests) / "
        "harness calls; client CPU per request calibrated here with the round's traffic shape "
        f"(64 staggered chains of sequential calls): litellm {f['client_cpu_ms_litellm']:.2f} ms, "
        f"direct {f['client_cpu_ms_direct']:.2f} ms",
        f"  the same calls sent in synchronised waves cost the client {f['client_cpu_ms_burst']:.2f}"
        " ms each; calibrated that way (an upper bound on ours, since it undercounts the "
        f"client) ours at {f['rows'][0]['latency_s']:g} s would read "
        f"{f['overhead_cpu_ms_per_call_burst_calibration']:.2f} ms/call",
        f"pool of {f['candidates']} workers started cold in {f['pool_cold_start_s']:.1f} s "
        "(in the adapter: while the current version is evaluated)",
    ]
    if f.get("faults"):
        x, clean = f["faults"], f["rows"][-1]
        lines.append(
            f"with endpoint errors at {x['latency_s']:g} s: {x['stored_results']}/"
            f"{x['expected_results']} results kept, {x['retries']} retries, "
            f"{x['infra_errors']} calls failed after retries, {x['infra_stops']} evaluations "
            f"stopped (InfraStop), {x['infra_scored']} infra errors scored, scores equal to the error-free run: {x['scores'] == clean['scores']}, "
            f"wall {x['wall_s']:.1f} s")
    return "\n".join(lines)
