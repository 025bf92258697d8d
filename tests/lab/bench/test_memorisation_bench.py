"""The memorisation check's benchmark: honest pairs read from a real log, memorisers simulated
from them, and the held-out split's promise that a copy gains nothing in selection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness_learning.evals.stats import clopper_pearson
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store.sqlite import SQLiteLogStore
from harness_learning_lab.bench import memorisation as bench


def test_collect_pairs_each_version_with_its_parent_on_common_problems(tmp_path: Path) -> None:
    with SQLiteLogStore(tmp_path) as store:
        store.init_run({"task": "rg:products"})
        seed = store.put_version("seed source", parent=None, round_=0, note="seed")
        child = store.put_version("child source", parent=seed, round_=1, note="candidate 0")
        ids = [f"p{i}" for i in range(9)]
        store.put_results(seed, "selection", 1, [ProblemResult(i, score=0.0) for i in ids])
        store.put_results(child, "selection", 1, [ProblemResult(i, score=1.0) for i in ids[:8]])
        store.put_results(child, "probe", 1, [ProblemResult("p8", score=1.0)])  # left out
    (row,) = bench.collect([tmp_path])
    assert row["task"] == "rg:products" and row["name"].endswith(child[:8])
    assert (row["parent"], row["candidate"]) == ([0.0] * 8, [1.0] * 8)
    assert list(bench.collect([tmp_path], min_problems=9)) == []


def test_a_memoriser_solves_what_it_copied_and_is_its_base_elsewhere() -> None:
    base = [0.0, 1.0, 0.0]
    assert bench.memoriser(base, [True, False, False], "on_parent") == [1.0, 1.0, 0.0]
    assert bench.memoriser(base, [True, False, False], "table_only") == [1.0, 0.0, 0.0]


def test_held_out_copies_gain_nothing_and_the_check_keeps_honest_harnesses() -> None:
    pairs = bench.load_pairs()
    assert len({p.name.split(":")[-1] for p in pairs}) >= 10, "at least 10 honest harnesses"
    rows = {(r["protocol"], r["case"]): r for r in bench.run(pairs, resamples=130)}
    for (protocol, case), row in rows.items():
        if "held out" in protocol and case != "honest":
            assert row["selection_gain"] <= 0.0, (protocol, case)
        if case == "honest":
            assert row["new"] <= 0.05, (protocol, row)
        if case == "table_only f=1.0":
            assert row["new"] == 1.0, (protocol, row)
    paper = rows[("reasoning, paper (25 shown = selection, 25 control)", "on_parent f=1.0")]
    assert paper["selection_gain"] > 0.3, "under the paper's split the copy pays"
    low, high = clopper_pearson(0, 130)
    assert low == 0.0 and 0.02 < high < 0.03  # Clopper-Pearson: 1 - 0.025 ** (1/130)


def test_the_bench_command_prints_its_table() -> None:
    cli = Path(sys.executable).with_name("harness-learn")
    done = subprocess.run([str(cli), "bench", "memorisation", "--resamples", "26", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "distinct harnesses" in done.stderr and "| protocol | case |" in done.stdout
    rows = json.loads(done.stdout.splitlines()[-1])
    assert {r["protocol"] for r in rows} == {p.name for p in bench.PROTOCOLS}
