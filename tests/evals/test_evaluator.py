"""The evaluator: gold stays out of the worker, results stream, failures are classified."""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass, field

import pytest

from harness_learning.evals.evaluator import evaluate_sync, guarded_score
from harness_learning.evals.problem import Problem
from harness_learning.harnesses.llm import InfraError
from harness_learning.harnesses.sandbox import Limits
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox

LIMITS = Limits(memory_mb=1536, pids=32, cpu_s=120, problem_timeout_s=30.0)


@dataclass
class SumTask:
    """Questions "a+b"; the gold is the sum. Counts scorer calls."""

    name: str = "sum"
    track: str = "reasoning"
    description: str = "add"
    seed: str = "reasoning_direct"
    scored: list = field(default_factory=list)

    def score(self, problem: Problem, answer: str) -> float:
        self.scored.append(problem.id)
        if answer == "raise":
            raise ValueError("odd answer")
        return float(answer.strip() == str(problem.gold))

    def retriever(self):
        return None


class Adder:
    """A scripted Solver for control flow: adds the numbers of the prompt's last line."""

    def __init__(self, delay_s: float = 0.0, fail_on: str | None = None) -> None:
        self.delay_s, self.fail_on, self.prompts = delay_s, fail_on, []
        self.in_flight = self.peak_in_flight = 0

    async def acomplete(self, messages, **params):
        self.prompts.append(messages)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        text = messages if isinstance(messages, str) else messages[-1]["content"]
        question = text.rsplit("Problem:", 1)[-1].strip()
        if self.fail_on and self.fail_on in question:
            raise InfraError("server", "endpoint returned 503")
        if question == "weird":
            return "Answer: raise"
        a, b = question.split("+")
        return f"Answer: {int(a) + int(b)}"


def problems(n: int) -> list[Problem]:
    return [Problem(f"p{i}", {"question": f"{i}+{i}"}, gold=2 * i, meta={"secret": f"gold-{i}"})
            for i in range(n)]


def test_scores_and_streams_results_and_keeps_gold_out():
    solver, task, streamed = Adder(delay_s=0.5), SumTask(), []
    probs = problems(16)
    probs[3] = Problem("p3", {"question": "3+3"}, gold=7)  # a wrong gold: score 0
    result = evaluate_sync(seed_source("reasoning_direct"), probs, task, Toolbox(solver),
                           concurrency=16, limits=LIMITS, on_result=streamed.append)
    assert [r.problem_id for r in result.results] == [p.id for p in probs]
    assert sorted(r.problem_id for r in streamed) == sorted(p.id for p in probs)
    assert result.mean_score == pytest.approx(15 / 16) and result.completed_fraction == 1.0
    assert all(len(r.calls) == 1 and r.latency_s > 0 for r in result.results)
    assert not any("gold" in str(prompt) for prompt in solver.prompts)
    assert sorted(task.scored) == sorted(p.id for p in probs)
    # The problems ran side by side: calls overlapped at the Solver (counted, not timed, so
    # a loaded machine's cold worker start cannot fail it).
    assert solver.peak_in_flight > 1, solver.peak_in_flight


def test_invalid_source_marks_every_problem_without_running():
    solver, streamed = Adder(), []
    result = evaluate_sync("def build_graph(tools):\n    return (\n", problems(3), SumTask(),
                           Toolbox(solver), limits=LIMITS, on_result=streamed.append)
    assert [r.error_kind for r in result.results] == ["invalid"] * 3
    assert "syntax" in result.results[0].error and len(streamed) == 3
    assert solver.prompts == [] and result.mean_score == 0.0


def test_build_failure_in_the_worker_is_invalid_too():
    source = "def build_graph(tools):\n    return None\n"
    result = evaluate_sync(source, problems(2), SumTask(), Toolbox(Adder()), limits=LIMITS)
    assert {r.error_kind for r in result.results} == {"invalid"}
    assert "not_a_graph" in result.results[0].error


def test_infra_errors_are_unscored_and_harness_errors_score_zero():
    catch_all = seed_source("reasoning_direct").replace(
        '        reply = tools.llm([*EXAMPLE, ask])',
        '        try:\n            reply = tools.llm([*EXAMPLE, ask])\n'
        '        except Exception:\n            reply = "Answer: 0"')
    assert catch_all != seed_source("reasoning_direct")
    probs = problems(3) + [Problem("bad", {"question": "nonsense"}, gold=1),
                           Problem("weird", {"question": "weird"}, gold=0)]
    result = evaluate_sync(catch_all, probs, SumTask(), Toolbox(Adder(fail_on="2+2")),
                           limits=LIMITS)
    by_id = {r.problem_id: r for r in result.results}
    assert by_id["p2"].error_kind == "infra" and by_id["p2"].score is None
    assert "503" in by_id["p2"].error
    assert by_id["bad"].score == 0.0 and by_id["bad"].answer == "0"  # harness caught a ToolError
    assert by_id["weird"].score == 0.0 and "scorer raised" in by_id["weird"].error
    assert by_id["p1"].score == 1.0
    assert result.infra_errors == 1 and len(result.scored) == 4


def test_guarded_score_clamps():
    class Wild(SumTask):
        def score(self, problem, answer):
            return {"big": 3.0, "nan": float("nan")}[answer]

    p = problems(1)[0]
    assert guarded_score(Wild(), p, "big") == (1.0, None)
    assert guarded_score(Wild(), p, "nan")[0] == 0.0


def test_a_crashed_worker_loses_only_unfinished_problems():
    source = seed_source("reasoning_direct").replace(
        '        reply = tools.llm(',
        '        if state["question"] == "5+5":\n            import os, time\n'
        '            time.sleep(1)\n            os._exit(3)\n        reply = tools.llm(')
    streamed = []
    result = evaluate_sync(source, problems(6), SumTask(), Toolbox(Adder()),
                           concurrency=6, limits=LIMITS, on_result=streamed.append)
    by_id = {r.problem_id: r for r in result.results}
    assert by_id["p5"].error_kind == "harness" and "exited" in by_id["p5"].error
    assert all(by_id[f"p{i}"].score == 1.0 for i in range(5))
    assert len(streamed) == 6


@pytest.mark.slow
def test_real_local_model_through_the_sandbox():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    from harness_learning.harnesses.llm import ensure_local_server, get_client

    ensure_local_server()  # started here, so the problem's time limit measures the run only
    probs = [Problem("two", {"question": "What is 2+2?"}, gold=4)]
    toolbox = Toolbox(get_client("local"), solver_params={"max_tokens": 48})
    limits = Limits(memory_mb=1536, pids=32, cpu_s=120, problem_timeout_s=180.0)
    result = evaluate_sync(seed_source("reasoning_direct"), probs, SumTask(), toolbox,
                           limits=limits)
    (r,) = result.results
    assert r.error_kind is None, r.error
    assert r.answer is not None and len(r.calls) == 1 and r.calls[0].tokens > 0
    assert 0 < r.calls[0].meta["completion_tokens"] <= 48
    assert r.calls[0].result.rsplit("Answer:", 1)[-1].strip() == r.answer or "Answer:" not in r.calls[0].result
    assert r.score in (0.0, 1.0)


STUCK_IN_C = """
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

class State(TypedDict, total=False):
    question: str
    answer: str

def build_graph(tools):
    def node(state):
        return {"answer": str(sum(range(10 ** 13)))}
    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g
"""


def test_an_evaluation_ends_by_its_round_deadline():
    """A harness stuck in C code holds the GIL, so the worker cannot time itself out and each
    problem would hold the round for its limit plus the parent's grace. The evaluation's
    deadline (`Limits.round_s`) ends the one running and the rest never start: all timeouts,
    scored 0. Each result names the round's deadline as its cause (read, not timed: a loaded
    machine's cold worker start must not fail it)."""
    from dataclasses import replace

    limits = replace(LIMITS, problem_timeout_s=1.0, problem_wait_factor=0.5)
    result = evaluate_sync(STUCK_IN_C, problems(3), SumTask(), Toolbox(), limits=limits,
                           concurrency=1)
    assert [r.error_kind for r in result.results] == ["timeout"] * 3, result.results
    assert all(r.score == 0.0 and "Limits.round_s" in r.error for r in result.results)
