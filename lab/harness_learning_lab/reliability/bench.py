"""All reliability scenarios in one go, for `harness-learn bench reliability`: the figures
(cases tried and contained per category and per sandbox backend, kills, resumes that matched,
records lost, infra errors scored wrong) and a table of them. The hostile catalogue runs on
every backend that can start here (`ranked_backends`); the other scenarios on the default."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any


def run_all(root: Path, *, kills: int = 5, seed: int = 0, log: Any = None) -> dict[str, Any]:
    from harness_learning.harnesses.llm import SimServer
    from harness_learning.harnesses.sandbox.backend import get_backend, ranked_backends
    from harness_learning_lab.reliability import baddata, crashes, faults, hostile, proposals

    root = Path(root)
    t0 = time.perf_counter()
    hostile_rows: list[dict] = []
    for name, _count in ranked_backends():
        server = SimServer(latency_s=0.01)
        server.start()
        try:
            hostile_rows += asyncio.run(hostile.run_catalogue(
                root / f"hostile-{name}", server, log=log, backend=get_backend(name)))
        finally:
            server.stop()
    proposal_rows = asyncio.run(proposals.run_bad_proposals(root / "proposals"))
    fault_rows = faults.run_faults(root / "faults", log=log)
    crash = crashes.run_crashes(root / "crashes", kills=kills, seed=seed, log=log)
    workers = crashes.kill_workers_midrun(root / "worker-kills", log=log)
    bad_rows = baddata.run_bad_data(root / "baddata", log=log)
    return summarise(hostile_rows, proposal_rows, fault_rows, crash, workers, bad_rows,
                     time.perf_counter() - t0)


def summarise(hostile_rows: list[dict], proposal_rows: list[dict], fault_rows: list[dict],
              crash: dict, workers: dict, bad_rows: list[dict], seconds: float) -> dict[str, Any]:
    tried = [r for r in hostile_rows if not r.get("skipped")]
    by_cat: dict[str, Counter] = {}
    for row in tried:
        c = by_cat.setdefault(row["category"], Counter())
        c["tried"] += 1
        c["contained"] += bool(row["contained"] and row["recorded"])
    hacks = [r for r in proposal_rows if r["kind"] in ("reward_hacking", "memorisation")]
    for row in hacks:  # judged through the adapter (proposals): one class each
        c = by_cat.setdefault(row["kind"], Counter())
        c["tried"] += 1
        c["contained"] += bool(row["ok"])
    resumed = [r for r in fault_rows if r["resumed"]]
    by_backend: dict[str, Counter] = {}
    for row in tried:
        if row.get("backend"):
            c = by_backend.setdefault(row["backend"], Counter())
            c["tried"] += 1
            c["contained"] += bool(row["contained"] and row["recorded"])
    return {
        "hostile_cases": sum(c["tried"] for c in by_cat.values()),
        "hostile_contained": sum(c["contained"] for c in by_cat.values()),
        "hostile_skipped": len(hostile_rows) - len(tried),
        "hostile_by_category": {k: dict(v) for k, v in sorted(by_cat.items())},
        "hostile_by_backend": {k: dict(v) for k, v in sorted(by_backend.items())},
        "not_contained": [":".join(filter(None, (r.get("backend"), r["case"]))) for r in tried
                          if not (r["contained"] and r["recorded"])]
        + [r["case"] for r in hacks if not r["ok"]],
        "bad_proposals": sum(r["kind"] == "malformed" for r in proposal_rows),
        "bad_proposals_named": sum(r["ok"] for r in proposal_rows if r["kind"] == "malformed"),
        "fault_modes": len(fault_rows),
        "fault_runs_completed": sum(r["completed"] for r in fault_rows),
        "fault_runs_stopped_then_resumed": len(resumed),
        "infra_errors_injected": sum(r["infra_errors_injected"] for r in fault_rows),
        "infra_errors_scored_wrong": sum(r["infra_errors_scored_wrong"] for r in fault_rows),
        "kills": crash["kills"],
        "kills_asked": crash.get("kills_asked", crash["kills"]),
        "worker_kills": workers["worker_kills"],
        "worker_kill_runs_completed": int(workers["completed"]),
        "worker_kill_run_resumed": bool(workers.get("stopped")),
        "resumes_tried": crash["resumes_tried"] + len(resumed),
        "resumes_matched": crash["resumes_matched"] + sum(r["matches_clean"] for r in resumed),
        "records_lost": crash["records_lost"] + sum(r["records_lost"] for r in fault_rows),
        "store_unsound_after_kill": len(crash["unsound_after_kill"]),
        "bad_data_cases": len(bad_rows),
        "bad_data_clear_errors": sum(r["clear"] for r in bad_rows),
        "bad_data_files_changed": sum(not r["unchanged"] for r in bad_rows),
        "seconds": round(seconds, 1),
    }


def table(f: dict[str, Any]) -> str:
    """The figures as an aligned text table."""
    rows = [(f"hostile: {cat}", f"{c['contained']}/{c['tried']} contained")
            for cat, c in f["hostile_by_category"].items()]
    rows += [(f"hostile on {name}", f"{c['contained']}/{c['tried']} contained")
             for name, c in f.get("hostile_by_backend", {}).items()]
    rows += [
        ("hostile: total", f"{f['hostile_contained']}/{f['hostile_cases']} contained"
         + (f", {f['hostile_skipped']} skipped (no bubblewrap)" if f["hostile_skipped"] else "")),
        ("bad Proposer output", f"{f['bad_proposals_named']}/{f['bad_proposals']} named failures"),
        ("endpoint fault modes", f"{f['fault_runs_completed']}/{f['fault_modes']} completed, "
         f"{f['fault_runs_stopped_then_resumed']} via resume"),
        ("infra errors injected / scored wrong",
         f"{f['infra_errors_injected']} / {f['infra_errors_scored_wrong']}"),
        ("adapter SIGKILLs (asked)", f"{f['kills']} ({f.get('kills_asked', f['kills'])})"),
        ("worker SIGKILLs, in one run", f"{f['worker_kills']}, run "
         + ("completed" if f["worker_kill_runs_completed"] else "NOT completed")
         + (" after a resume" if f.get("worker_kill_run_resumed") else "")),
        ("resumes matching an uninterrupted run", f"{f['resumes_matched']}/{f['resumes_tried']}"),
        ("records lost", str(f["records_lost"])),
        ("store unsound after a kill", str(f["store_unsound_after_kill"])),
        ("bad data: clear errors", f"{f['bad_data_clear_errors']}/{f['bad_data_cases']}"),
        ("bad data: files changed", str(f["bad_data_files_changed"])),
        ("wall time (s)", str(f["seconds"])),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
