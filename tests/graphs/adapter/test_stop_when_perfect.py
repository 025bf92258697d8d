"""A strict run stops once the version in force scores the metric's maximum on selection
(`AdaptConfig.stop_when_perfect`, graphs/adapter/nodes.py `stop_reason`): no later candidate
could be adopted, so its rounds would only spend Solver calls. The rule's cases, then a real
run (the local SmolLM2 as Proposer) whose start harness is already perfect."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.nodes import stop_reason

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "your_own_agent"
PERFECT_SHOP = '''"""Prices the shop's question without the Solver: quantity and item by pattern, the unit
price from the user's tool, the product in Python."""

import re

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    shop: str
    answer: str


def build_graph(tools):
    def solve(state: State) -> dict:
        found = re.search(r"(\\d+) (?:loaves of )?(\\w+) cost", state["question"])
        count, item = int(found.group(1)), found.group(2)
        price = tools.unit_price(item=item, shop=state["shop"])["euros"]
        return {"answer": f"{count * price:.2f}"}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
'''


def config(**given) -> AdaptConfig:
    return AdaptConfig(task="sums", run_dir="x", rounds=5, **given)


@pytest.mark.parametrize(("given", "best", "stops"), [
    ({"policy": "strict"}, 1.0, True),
    ({"policy": "strict"}, 0.875, False),
    ({"policy": "strict", "stop_when_perfect": False}, 1.0, False),
    ({"policy": "best_valid"}, 1.0, False),  # it may adopt at an equal or lower score
    ({"policy": "strict"}, None, False),      # nothing scored yet
])
def test_the_rule(given: dict, best: float | None, stops: bool) -> None:
    reason = stop_reason(config(**given), {"round": 2, "best_score": best})
    assert (reason == "selection score 1.000 is the metric's maximum") is stops
    assert stops or reason is None


@pytest.mark.slow
def test_a_run_whose_start_harness_is_perfect_stops_after_one_round(
        local_model_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "mine")
    (tmp_path / "mine" / "perfect.py").write_text(PERFECT_SHOP)
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(app, [
        "adapt", "--task", "mine/tasks.jsonl", "--metric", "mine/shop_metric.py:score",
        "--tools", "mine/shop_tools.py:unit_price", "--harness", "mine/perfect.py",
        "--describe", "@mine/task.md", "--run-dir", "run", "--proposer", "local:smollm2-135m",
        "--policy", "strict", "--rounds", "3", "--candidates", "1", "--feedback", "2",
        "--selection", "3", "--dev", "5", "--test", "3", "--concurrency", "2",
        "--proposer-max-tokens", "256", "--json"])
    assert run.exit_code == 0, run.output
    summary = json.loads(run.output.strip().splitlines()[-1])
    assert summary["rounds"] == 1, summary
    assert summary["stop_reason"] == "selection score 1.000 is the metric's maximum"
