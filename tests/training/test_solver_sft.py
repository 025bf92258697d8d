"""`train solver-sft`: the Solver calls of dev problems a chosen version solved, and nothing
else, become its SFT set; a tiny model trains on them. (The real path, SmolLM2 fine-tuned on a
real run, exported and tested with its harness, is in tests/graphs/test_demo_cmd.py.)"""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.training.config import SolverSFTConfig
from harness_learning.training.data import LogError
from harness_learning.training.solver_sft import TrajectoryReport, train_solver_sft, trajectory_rows


def solved(pid: str, question: str, reply: str, score: float = 1.0, **call) -> ProblemResult:
    messages = [{"role": "user", "content": question}]
    calls = [ToolCall("search", {"query": question, "k": 3}, result=[]),
             ToolCall("llm", {"messages": messages, "params": {}}, result=reply, **call)]
    return ProblemResult(pid, answer=reply, score=score, calls=calls)


@pytest.fixture
def run_dir(tmp_path):
    """Seed, then an adopted version; each evaluated on feedback, selection and test."""
    store = SQLiteLogStore(tmp_path)
    store.init_run({"task": "rg:basic_arithmetic"})
    seed = store.put_version("seed source", None, 0, "seed")
    evolved = store.put_version("evolved source", seed, 1, "candidate")
    store.put_results(seed, "feedback", 1, [solved("p1", "seed asks 1+1", "Answer: 2")])
    store.put_results(evolved, "feedback", 2, [
        solved("p1", "evolved asks 1+1", "Answer: 2"),
        solved("p2", "evolved asks 2+2", "Answer: 5", score=0.0),        # wrong: not learned
        solved("p3", "evolved asks 3+3", "", ),                           # empty reply
        solved("p4", "evolved asks 4+4", "Answer: 8", error="timeout"),   # failed call
    ])
    # the same problem again for selection (a duplicate), and a new one
    store.put_results(evolved, "selection", 2, [solved("p1", "evolved asks 1+1", "Answer: 2"),
                                                solved("p5", "evolved asks 5+5", "Answer: 10")])
    store.put_results(evolved, "test", -1, [solved("t1", "evolved asks 7+7", "Answer: 14")])
    store.put_results(evolved, "test@local:x.gguf", -1,
                      [solved("t2", "evolved asks 8+8", "Answer: 16")])
    store.put_decision(round_=1, current_sha=seed, chosen_sha=evolved, policy="strict",
                       scores={"current": 0.5, "chosen": 1.0})
    store.close()
    return tmp_path


def questions(rows) -> list[str]:
    return sorted(r["prompt"][0]["content"] for r in rows)


def test_only_dev_problems_the_final_version_solved_are_learned(run_dir):
    report = TrajectoryReport()
    rows = trajectory_rows([run_dir], "final", 1.0, report)
    assert questions(rows) == ["evolved asks 1+1", "evolved asks 5+5"]  # no test problem
    assert all(r["completion"][0]["role"] == "assistant" for r in rows)
    assert {r["completion"][0]["content"] for r in rows} == {"Answer: 2", "Answer: 10"}
    assert (report.runs, report.versions, report.problems_read, report.problems_solved,
            report.calls_kept, report.duplicates_folded) == (1, 1, 6, 5, 2, 1)
    assert "6 dev evaluations, 5 scored >= 1" in report.notes[0]


def test_which_versions_is_a_choice(run_dir):
    lineage = trajectory_rows([run_dir], "lineage", 1.0, TrajectoryReport())
    assert "seed asks 1+1" in questions(lineage) and len(lineage) == 3
    assert questions(trajectory_rows([run_dir], "all", 0.0, TrajectoryReport())) == [
        "evolved asks 1+1", "evolved asks 2+2", "evolved asks 5+5", "seed asks 1+1"]
    seed_sha = next(v.sha for v in SQLiteLogStore(run_dir).iter_versions() if v.parent_sha is None)
    assert questions(trajectory_rows([run_dir], seed_sha[:8], 1.0, TrajectoryReport())) == [
        "seed asks 1+1"]


def test_nothing_to_learn_is_a_clear_error(run_dir, tmp_path):
    with pytest.raises(LogError, match="matches 0 evaluated versions"):
        trajectory_rows([run_dir], "ffff", 1.0, TrajectoryReport())
    with pytest.raises(LogError, match="no successful Solver call"):
        trajectory_rows([run_dir], "final", 1.5, TrajectoryReport())
    with pytest.raises(LogError, match="no execution log"):
        trajectory_rows([tmp_path / "nowhere"], "final", 1.0, TrajectoryReport())


def test_two_steps_on_the_trajectories_move_the_weights(run_dir, tiny_dir, tmp_path):
    config = SolverSFTConfig(model=str(tiny_dir), out=str(tmp_path / "solver"), max_steps=2,
                             batch_size=2, lora=False, learning_rate=1e-2)
    result = train_solver_sft([run_dir], config, progress=False)
    losses = [json.loads(line).get("loss") for line in result.metrics.read_text().splitlines()]
    losses = [v for v in losses if v is not None]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    before = load_file(str(tiny_dir / "model.safetensors"))
    after = load_file(str(result.checkpoint / "model.safetensors"))
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert result.report.calls_kept == 2
