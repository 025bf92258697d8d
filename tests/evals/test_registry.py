"""Tasks by name, with options and clear errors."""

from __future__ import annotations

import pytest

from harness_learning.evals.qa.task import QATask
from harness_learning.evals.reasoning_tasks import ReasoningTask
from harness_learning.evals.registry import get_task, known_task_names
from harness_learning.evals.samples import SAMPLE_FILES


def test_reasoning_task_by_name():
    task = get_task("rg:leg_counting", n_dev=3, n_test=2, seed=5)
    assert isinstance(task, ReasoningTask)
    assert task.name == "rg:leg_counting" and len(task.dev()) == 3 and len(task.test()) == 2


@pytest.mark.parametrize("name", ["hotpotqa", "musique", "2wiki"])
def test_qa_tasks_by_name_default_to_the_sample(data_dir, monkeypatch, name):
    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(data_dir))
    task = get_task(name, n_dev=10, n_test=5, seed=1)
    assert isinstance(task, QATask) and task.name == name
    explicit = get_task(name, path=data_dir / SAMPLE_FILES[name], n_dev=10, n_test=5, seed=1)
    assert [p.id for p in task.dev()] == [p.id for p in explicit.dev()]


def test_unknown_name_lists_known_ones():
    with pytest.raises(ValueError, match="unknown task 'squad'; known: hotpotqa, musique, 2wiki"):
        get_task("squad")
    with pytest.raises(ValueError, match="rg:leg_counting"):
        get_task("rg:not_a_dataset")
    assert {"hotpotqa", "musique", "2wiki", "rg:basic_arithmetic"} <= set(known_task_names())


def test_bad_options(data_dir):
    with pytest.raises(TypeError, match="unknown option\\(s\\) index_dir"):
        get_task("rg:leg_counting", index_dir="x")
    with pytest.raises(ValueError, match="2wiki only"):
        get_task("musique", path=data_dir / SAMPLE_FILES["musique"], aliases="id_aliases.json")


def test_missing_default_sample_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no `path` given.*pass path="):
        get_task("hotpotqa")
