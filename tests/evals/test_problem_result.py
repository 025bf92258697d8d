"""One per-problem record from the sandbox to the log and back: what the evaluator returns is
what the store gives back, equal and of the same type; the error kinds are defined once."""

from __future__ import annotations

import dataclasses

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.evals.evaluator import evaluate_sync
from harness_learning.evals.problem import Problem
from harness_learning.harnesses.llm import InfraError
from harness_learning.harnesses.results import (
    HARNESS_FAULTS,
    UNSCORED,
    ErrorKind,
    ProblemResult,
)
from harness_learning.harnesses.sandbox import Limits
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.harnesses.toolbox import Toolbox

LIMITS = Limits(memory_mb=1536, pids=32, cpu_s=120, problem_timeout_s=30.0)

RAISES_ON_SEVEN = seed_source("reasoning_direct").replace(
    '        return {"answer": answer}',
    '        if "7" in state["question"]:\n            raise RuntimeError("seven")\n'
    '        return {"answer": answer}')


def test_results_from_the_sandbox_come_back_from_the_log_unchanged(tmp_path):
    """Answers, a harness fault with its traceback and an infra failure, run in real sandbox
    workers, stored and read back: the same records."""
    assert seed_source("reasoning_direct") != RAISES_ON_SEVEN
    task = SumTask()
    problems = [Problem("a", {"question": "What is 2 + 3?"}, "5"),
                Problem("b", {"question": "What is 1 + 7?"}, "8"),
                Problem("c", {"question": "What is 3 + 4?"}, "7"),  # odd first term: off by one
                Problem("d", {"question": "What is 9 + 9?"}, "18")]

    def rule(prompt: str, params: dict) -> str:
        if "9 + 9" in prompt:
            raise InfraError("server", "endpoint returned 503")
        return solver_rule(prompt, params)

    toolbox = Toolbox(solver=ScriptedModel(rule))
    result = evaluate_sync(RAISES_ON_SEVEN, problems, task, toolbox, limits=LIMITS)
    by_id = {r.problem_id: r for r in result.results}
    assert by_id["a"].score == 1.0 and by_id["a"].calls and by_id["a"].completed
    assert by_id["b"].error_kind is ErrorKind.HARNESS and "seven" in by_id["b"].traceback
    assert by_id["c"].score == 0.0 and by_id["c"].completed
    assert by_id["d"].error_kind is ErrorKind.INFRA and by_id["d"].score is None

    with SQLiteLogStore(tmp_path) as store:
        store.put_results("sha", "selection", 1, result.results)
        back = store.get_results("sha", list(by_id), "selection", redo_kinds=())
        stored = [e.result for e in store.iter_evaluations(sha="sha")]
    assert back == by_id  # dataclass equality: every field, calls included
    assert all(type(r) is ProblemResult for r in [*back.values(), *stored])
    assert stored == result.results
    assert back["d"].error_kind is ErrorKind.INFRA and back["b"].calls == by_id["b"].calls


def test_a_result_survives_its_json_form():
    from harness_learning.harnesses.contract import ToolCall

    result = ProblemResult("p", None, None, "endpoint down", "infra", None,
                           [ToolCall("llm", {"messages_or_prompt": "q"}, None, "down")], 1.5, 3)
    assert ProblemResult.from_dict(result.to_dict()) == result
    assert result.error_kind is ErrorKind.INFRA and result.unscored
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.score = 1.0  # type: ignore[misc]


def test_error_kinds_are_one_vocabulary():
    assert {ErrorKind.INFRA, ErrorKind.BUDGET} == UNSCORED
    assert set(ErrorKind) == HARNESS_FAULTS | UNSCORED and not HARNESS_FAULTS & UNSCORED
    # a kind the record does not know is the harness's fault, never infrastructure
    assert ProblemResult("p", error_kind="network").error_kind is ErrorKind.HARNESS
    from harness_learning.harnesses.store.base import UNFINISHED_KINDS

    assert UNFINISHED_KINDS is UNSCORED


def test_a_refused_source_carries_its_check_to_the_log_and_the_judge(tmp_path):
    """A source the sandbox refuses (here a syntax error) gives INVALID results whose
    `refused_by` names the refusing check; the store keeps it and the judge's verdict reads it from there.
    An error text that merely starts like a check is not parsed into one."""
    from harness_learning.evals.judge import INCOMPLETE, incomplete_verdict
    from harness_learning.evals.result import EvalResult

    broken = seed_source("reasoning_direct").replace("def build_graph(", "def build_graph((")
    problems = [Problem("a", {"question": "What is 2 + 3?"}, "5")]
    toolbox = Toolbox(solver=ScriptedModel(solver_rule))
    result = evaluate_sync(broken, problems, SumTask(), toolbox, limits=LIMITS)
    (refused,) = result.results
    assert refused.error_kind is ErrorKind.INVALID and refused.refused_by == "syntax"
    with SQLiteLogStore(tmp_path) as store:
        store.put_results("sha", "selection", 1, result.results)
        (back,) = [e.result for e in store.iter_evaluations(sha="sha")]
    assert back == refused
    verdict = incomplete_verdict(EvalResult([back]))
    assert verdict["invalid_kind"] == "syntax" and verdict["invalid_reason"] == refused.error

    look_alike = dataclasses.replace(refused, refused_by=None, error="syntax: said by someone else")
    assert incomplete_verdict(EvalResult([look_alike]))["invalid_kind"] == INCOMPLETE
