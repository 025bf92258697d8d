"""`bench task-types`: the class of each type, and the file the learning experiments read."""

from __future__ import annotations

import json
import tomllib

import pytest
import typer

from harness_learning_lab.bench import task_types
from harness_learning_lab.cli.bench_task_types_cmd import bench_task_types


def test_a_type_is_classed_by_its_gain_and_the_intervals_lower_end() -> None:
    assert task_types.classify(0.70, 0.50) == "headroom"
    assert task_types.classify(0.25, 0.04) == "headroom"
    assert task_types.classify(0.20, 0.04) == "modest"
    assert task_types.classify(0.30, 0.0) == "control"  # an interval touching 0 is no help
    assert task_types.classify(-0.10, -0.30) == "control"


def _arm(out, task: str, arm: str, scores: list[float]) -> None:
    name = f"{task.replace(':', '_')}__{arm}.json"
    (out / name).write_text(json.dumps({"task": task, "arm": arm, "scores": scores,
                                        "llm_calls": len(scores) * (2 if arm != "seed" else 1),
                                        "wall_s": 1.0, "f1": None}))


def test_the_command_writes_the_classed_types_from_kept_results(tmp_path, capsys) -> None:
    out, n = tmp_path / "bench", 8
    out.mkdir()
    _arm(out, "rg:products", "seed", [0.0] * n)
    _arm(out, "rg:products", "interpreter", [1.0] * n)  # +1.0: headroom
    _arm(out, "rg:leg_counting", "seed", [1.0, 0.0] * 4)
    _arm(out, "rg:leg_counting", "interpreter", [0.0, 1.0] * 4)  # 0.0: control
    path = tmp_path / "task_types.toml"
    # Every arm is kept, so no model is asked: the Solver named cannot answer anything.
    bench_task_types(tasks="rg:products,rg:leg_counting", n=n, solver="nobody:no-model",
                     out=out, write=path, as_json=True)
    printed = capsys.readouterr().out.splitlines()
    written = tomllib.loads(path.read_text())
    assert written["headroom"] == ["rg:products"] and written["control"] == ["rg:leg_counting"]
    assert written["modest"] == []
    products = next(t for t in written["type"] if t["task"] == "rg:products")
    assert (products["seed"], products["interpreter"], products["gain"]) == (0.0, 1.0, 1.0)
    assert products["solver_calls_per_problem"] == [1.0, 2.0] and products["n"] == n
    assert [e["task"] for e in json.loads(printed[-1])] == ["rg:products", "rg:leg_counting"]
    assert path.read_text().startswith("# The reasoning-gym types")


def test_a_type_that_is_not_reasoning_gym_is_refused(tmp_path) -> None:
    with pytest.raises(typer.BadParameter, match="rg:<name>"):
        bench_task_types(tasks="musique", n=2, solver="local", out=tmp_path, write=None,
                         as_json=False)
