"""Tasks by reference (module:Class, file.py:Class, an entry point) and a user metric that
misbehaves during a real evaluation: that problem scores 0 with the reason, reported once."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint

import pytest

from harness_learning.evals import registry
from harness_learning.evals.evaluator import evaluate_sync
from harness_learning.evals.registry import get_task
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox

TASK_CLASS = '''
from harness_learning.evals.problem import Problem


class Tiny:
    name, track, seed = "tiny", "reasoning", "reasoning_direct"
    description = "One question."

    def __init__(self, size=1):
        self.size = size

    def dev(self):
        return [Problem(f"d{i}", {"question": "q"}, "a") for i in range(self.size)]

    def test(self):
        return []

    def score(self, problem, answer):
        return float(answer == problem.gold)

    def retriever(self):
        return None


class NotATask:
    pass
'''


def test_a_task_class_by_file_reference_gets_the_options(tmp_path):
    (tmp_path / "tiny_task.py").write_text(TASK_CLASS)
    task = get_task(f"{tmp_path / 'tiny_task.py'}:Tiny", size=3)
    assert [p.id for p in task.dev()] == ["d0", "d1", "d2"]
    with pytest.raises(TypeError, match="does not implement the Task protocol \\(missing: name"):
        get_task(f"{tmp_path / 'tiny_task.py'}:NotATask")
    with pytest.raises(ImportError, match="has no attribute 'Nope'"):
        get_task(f"{tmp_path / 'tiny_task.py'}:Nope")


def test_a_registered_entry_point_is_a_task_name(tmp_path, monkeypatch):
    (tmp_path / "tiny_task_ep.py").write_text(TASK_CLASS)
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint("tiny", "tiny_task_ep:Tiny", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: {"tiny": point})
    assert len(get_task("tiny", size=2).dev()) == 2
    assert "tiny" in registry.known_task_names()


def test_data_file_tasks_take_only_their_options(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    with pytest.raises(TypeError, match="unknown option\\(s\\) index_dir"):
        get_task(str(path), index_dir="x")


@pytest.mark.parametrize(("body", "why"), [
    ("return 2.0", "returned 2.0; a metric must return a number in [0, 1]"),
    ("raise KeyError('gold')", "raised KeyError: 'gold'"),
])
def test_a_misbehaving_metric_scores_zero_and_is_reported_once(tmp_path, capsys, body, why):
    (tmp_path / "bad_metric.py").write_text(f"def score(prediction, gold, example):\n    {body}\n")
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"question": f"q{i}", "answer": "a"}) + "\n"
                            for i in range(3)))
    task = get_task(str(path), metric=f"{tmp_path / 'bad_metric.py'}:score", n_dev=3, n_test=0)

    class Echo:
        async def acomplete(self, messages, **params):
            return "a"

    result = evaluate_sync(seed_source("reasoning_direct"), task.dev(), task,
                           Toolbox(solver=Echo()))
    assert [r.score for r in result.results] == [0.0, 0.0, 0.0]
    assert all(why in (r.error or "") for r in result.results)
    assert capsys.readouterr().err.count("warning: metric") == 1
