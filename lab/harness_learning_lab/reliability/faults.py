"""Endpoint faults during an adaptation run: the simulated server fails 20% or 50% of calls,
hangs past the client's timeout, rate-limits, sends malformed bodies, or dies mid-run and
comes back. (An empty completion is not among them: for a Solver call it is an answer, which
a harness's own stop sequences or token limit can cause.) Each run must complete, or stop
with `InfraStop` (or the model layer's `InfraError` for a Proposer call) and then complete on
`resume`; nothing stored before the resume may be missing after it; and since the server
answers every Solver question right, a stored score below 1 is an infrastructure error scored
as a wrong answer (must be 0)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import InfraStop
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.llm import InfraError, SimServer, clear_clients
from harness_learning.harnesses.llm.simserver import ARITHMETIC_RULE
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.sandbox import Limits
from harness_learning_lab.reliability.common import (
    SumTask,
    decisions,
    evaluation_keys,
    integrity,
    revision_rule,
    sim_spec,
    stored_scores,
)

MODES: dict[str, dict[str, Any]] = {
    "clean": {},
    "errors_20pct": {"error_rate": 0.2, "error_kinds": ("429", "500")},
    "errors_50pct": {"error_rate": 0.5, "error_kinds": ("429", "500")},
    "timeouts": {"error_rate": 0.3, "error_kinds": ("timeout",), "hang_s": 30.0},
    "429_storm": {"fail_first": 40, "error_kinds": ("429",), "retry_after_s": 0.05},
    "malformed": {"error_rate": 0.3, "error_kinds": ("malformed",)},
    "dies_mid_run": {"die_after": 6},
}
CLIENT = {"max_retries": 2, "timeout_s": 2, "backoff_s": 0.05, "max_backoff_s": 0.2}
HEALTHY = {"error_rate": 0.0, "fail_first": 0}


def fault_config(run_dir: Path, url: str) -> AdaptConfig:
    spec = sim_spec(url, **CLIENT)
    return AdaptConfig(task="sums", run_dir=str(run_dir), solver=spec, proposer=spec, rounds=2,
                       candidates=1, policy="best_valid", edit_format="search_replace",
                       feedback=2, selection=2, concurrency=2).with_track_defaults("reasoning")


def _context(config: AdaptConfig) -> AdapterContext:
    clear_clients()  # a fresh event loop per run: no client bound to a closed one
    return AdapterContext.from_config(
        config, task=SumTask(), limits=Limits(problem_timeout_s=30.0, candidate_timeout_s=300.0))


def _killer(server: SimServer, after: int) -> threading.Thread:
    """Stops the server once it has seen `after` requests (the mid-run death)."""

    def watch() -> None:
        deadline = time.time() + 120
        while server.stats.requests < after and time.time() < deadline:
            time.sleep(0.02)
        server.stop()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def run_mode(root: Path, mode: str) -> dict[str, Any]:
    """One fault mode: run, maybe stop, heal the server, resume; returns the figures."""
    settings = dict(MODES[mode])
    die_after = settings.pop("die_after", None)
    server = SimServer(latency_s=0.01, seed=7, rules=[revision_rule(), ARITHMETIC_RULE], **settings)
    url = server.start()
    config = fault_config(Path(root) / mode, url)
    stops: list[str] = []
    t0 = time.perf_counter()
    try:
        if die_after:
            _killer(server, die_after)
        try:
            final = asyncio.run(run_adaptation(config, context=_context(config)))
        except (InfraStop, InfraError) as exc:
            stops.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            before = evaluation_keys(config.path)
            server.configure(**HEALTHY)
            server.start()  # a no-op unless it died
            final = asyncio.run(run_adaptation(config, resume=True, context=_context(config)))
        else:
            before = evaluation_keys(config.path)
        after = evaluation_keys(config.path)
        scores = stored_scores(config.path)
    finally:
        server.stop()
    return {"mode": mode, "stopped": stops, "resumed": bool(stops),
            "completed": final.get("stop_reason", "").startswith("finished"),
            "records_lost": len(before - after),
            "infra_errors_injected": server.stats.errors_injected,
            "infra_errors_scored_wrong": sum(1 for row in scores if row[1] != 1.0),
            "scored_wrong_examples": [row for row in scores if row[1] != 1.0][:3],
            "evaluations": len(after), "current_sha": final.get("current_sha"),
            "decisions": [d[1:] for d in decisions(config.path)],
            "log_integrity": integrity(RunDir(config.path).log),
            "seconds": round(time.perf_counter() - t0, 1)}


def run_faults(root: Path, modes: list[str] | None = None, log: Any = None) -> list[dict]:
    """Every mode (clean first: the others must end where it ends)."""
    rows = []
    for mode in modes or list(MODES):
        row = run_mode(root, mode)
        rows.append(row)
        if log:
            log(f"faults {mode}: completed={row['completed']} stopped={len(row['stopped'])} "
                f"lost={row['records_lost']} scored_wrong={row['infra_errors_scored_wrong']}")
    clean = next((r for r in rows if r["mode"] == "clean"), None)
    for row in rows:
        row["matches_clean"] = clean is not None and (
            row["current_sha"], row["decisions"]) == (clean["current_sha"], clean["decisions"])
    return rows
