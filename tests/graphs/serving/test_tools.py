"""The LangChain tools: schemas an agent sees, and calls the way an agent makes them."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from harness_learning.graphs.serving.tools import (
    AdaptHarness,
    EvaluateHarness,
    RunHarness,
    harness_tools,
)
from harness_learning.harnesses.llm import SimServer
from harness_learning.harnesses.llm.simserver import ARITHMETIC_RULE
from harness_learning.harnesses.seeds import seed_source

pytestmark = pytest.mark.timeout(180)

SEED_LINE = next(line for line in seed_source("reasoning_direct").splitlines()
                 if line.startswith('PROMPT = """'))
NEW_LINE = SEED_LINE.replace('PROMPT = """', 'PROMPT = """Check your arithmetic. ', 1)
EDIT = f"<<<<<<< SEARCH\n{SEED_LINE}\n=======\n{NEW_LINE}\n>>>>>>> REPLACE"


@pytest.fixture(scope="module")
def sim():
    with SimServer(latency_s=0.01, rules=[(r"## How to answer", lambda m: EDIT), ARITHMETIC_RULE]) as url:
        yield f"openai/sim@{url}"


def test_schemas_for_agents() -> None:
    specs = {t.name: convert_to_openai_tool(t)["function"] for t in harness_tools()}
    assert set(specs) == {"run_harness", "evaluate_harness", "adapt_harness"}
    run = specs["run_harness"]["parameters"]
    assert run["required"] == ["question"] and run["properties"]["harness"]["default"] == "reasoning_direct"
    ev = specs["evaluate_harness"]["parameters"]["properties"]
    assert ev["split"]["enum"] == ["dev", "test"] and ev["n"]["maximum"] == 500
    assert set(specs["adapt_harness"]["parameters"]["required"]) == {"task", "run_dir"}


def test_run_harness_as_an_agent_calls_it(sim) -> None:
    tool = RunHarness(model=sim)
    call = {"name": "run_harness", "args": {"question": "What is 11 * 3?"}, "id": "call-1",
            "type": "tool_call"}
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call-1"
    assert message.content == "33"
    bad = tool.invoke({**call, "args": {"question": "x", "harness": "no_such_seed"}})
    assert "not a seed" in bad.content  # a tool error the agent can read, not a crash


def test_evaluate_harness_scores_problems(sim) -> None:
    out = json.loads(EvaluateHarness(model=sim, concurrency=2).invoke(
        {"task": "rg:basic_arithmetic", "n": 3, "split": "test"}))
    assert out["harness"] == "seed reasoning_direct" and len(out["problems"]) == 3
    assert out["completed"] == 1.0
    assert out["mean_score"] == sum(p["score"] for p in out["problems"]) / 3
    bad = EvaluateHarness(model=sim).invoke({"task": "rg:not_a_dataset", "n": 1})
    assert "unknown task" in bad


def test_adapt_harness_runs_and_resumes(sim, tmp_path) -> None:
    tool = AdaptHarness(solver=sim, proposer=sim, task_options={"n_dev": 4, "n_test": 1})
    args = {"task": "rg:basic_arithmetic", "run_dir": str(tmp_path / "run"), "rounds": 1,
            "feedback": 2, "selection": 2, "policy": "best_valid"}
    out = json.loads(tool.invoke(args))
    (round1,) = out["rounds"]
    assert round1["candidates"][0]["valid"] is True and round1["adopted"] is True
    assert out["stop_reason"] == "finished 1 rounds" and len(out["current_version"]) == 12
    again = json.loads(tool.invoke(args))  # the run exists: resumed, nothing redone
    assert again["rounds"] == out["rounds"] and again["current_version"] == out["current_version"]
    served = RunHarness(model=sim).invoke({"question": "What is 4 + 4?", "harness": out["run_dir"]})
    assert served == "8"


@pytest.mark.slow
def test_run_harness_with_the_local_model(local_model_url) -> None:
    answer = RunHarness(model="local").invoke({"question": "What is 2 + 2?"})
    assert isinstance(answer, str) and answer.strip()
    assert not answer.startswith("harness run failed")
