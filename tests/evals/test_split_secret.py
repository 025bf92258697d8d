"""Reasoning-gym splits seeded from a secret the parent keeps: harness code that imports the
generator cannot regenerate them from public seeds, and the test split repeats no question."""

from __future__ import annotations

import harness_learning.evals.reasoning_tasks as rg
from harness_learning.evals.reasoning_tasks import ReasoningTask


def questions(task: ReasoningTask) -> list[str]:
    return [p.question for p in task.dev() + task.test()]


def test_a_secret_gives_other_problems_than_the_public_seeds():
    public = ReasoningTask("basic_arithmetic", n_dev=5, n_test=5, seed=0)
    secret = rg.new_split_secret()
    hidden = ReasoningTask("basic_arithmetic", n_dev=5, n_test=5, split_secret=secret)
    again = ReasoningTask("basic_arithmetic", n_dev=5, n_test=5, split_secret=secret)
    other = ReasoningTask("basic_arithmetic", n_dev=5, n_test=5, split_secret=rg.new_split_secret())
    assert questions(hidden) == questions(again)  # reproducible from the stored secret
    assert not set(questions(hidden)) & set(questions(public))
    assert questions(hidden) != questions(other)


def test_secret_seed_ranges_never_overlap():
    for i in range(200):
        dev, test = rg.secret_seeds(f"s{i}", "leg_counting", 25)
        assert abs(test - dev) >= 25


def test_the_test_split_holds_no_duplicate_question(monkeypatch):
    def few_questions(name, seed, size, config_json):  # each question comes up twice in a row
        return tuple({"question": f"q{(seed + i) // 2}", "answer": "a"} for i in range(size))

    monkeypatch.setattr(rg, "_generate", few_questions)
    task = ReasoningTask("basic_arithmetic", n_dev=2, n_test=5, seed=0)
    test = [p.question for p in task.test()]
    assert len(test) == len(set(test)) == 5
    assert not set(test) & {p.question for p in task.dev()}


def test_control_problems_are_new_and_never_in_a_split():
    task = ReasoningTask("basic_arithmetic", n_dev=5, n_test=5, split_secret="k")
    control = task.control(6)
    assert len(control) == 6 and all(p.id.startswith("basic_arithmetic/control/") for p in control)
    assert not {p.question for p in control} & set(questions(task))
