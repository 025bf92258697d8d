"""A writer killed with SIGKILL mid-writes leaves a sound store that kept every acknowledged
write (a real kill of a real subprocess)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from harness_learning.harnesses.store import SQLiteLogStore

REPO = Path(__file__).resolve().parents[3]

WRITER = textwrap.dedent("""
    import sys
    from harness_learning.harnesses.contract import ToolCall
    from harness_learning.harnesses.results import ProblemResult
    from harness_learning.harnesses.store import Evaluation, Proposal, SQLiteLogStore
    store = SQLiteLogStore(sys.argv[1])
    run = store.init_run({"crash": True})
    i = 0
    while True:
        store.put_evaluations([Evaluation(run.run_id, "sha", "selection", 1, ProblemResult(
            f"p{i}", "a" * 2000, 0.5, calls=[ToolCall("llm", {"x": "y" * 5000})]))])
        store.put_proposal(Proposal(f"prop{i}", 1, "g", "prompt " * 500, "completion " * 500))
        seq = store.append_event("tick", {"i": i})
        print(i, seq, flush=True)
        i += 1
""")


def test_sigkill_mid_writes_keeps_every_acknowledged_write(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    acked: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    try:
        while len(acked) < 150 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(tuple(map(int, line.split())))
        os.kill(proc.pid, signal.SIGKILL)  # lands in the middle of a later write
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
    assert len(acked) >= 150, "the writer did not get going"

    with SQLiteLogStore(tmp_path) as store:
        assert store.integrity_check() == "ok"
        done = set(store.get_results("sha", [f"p{i}" for i, _ in acked], "selection"))
        events = {e.payload["i"]: e.seq for e in store.iter_events()}
        for i, seq in acked:
            assert f"p{i}" in done and events[i] == seq
            assert store.get_proposal(f"prop{i}").completion == "completion " * 500
        # Whatever was in flight is either wholly there or wholly absent.
        assert all(len(e.result.answer) == 2000 for e in store.iter_evaluations())
        store.append_event("resumed")  # and the store takes new writes
