"""The user's own code fails loudly: a metric that fails on a gold answer stops `run` and `adapt`
before anything runs (exit 2, one line naming the metric, the problem and the exception's last
line); a metric that fails on a harness's odd answer scores it 0 as `metric_error`, and a tool
that raises is counted, both shown by `run`, `show` and `report` without ending the run.

A task of one's own as a user writes it (examples/your_own_agent): a JSONL file, a metric file,
a tool file and a harness that calls the tool. The harness needs no model, so the runs are
deterministic and take seconds; the sandbox, the bridge, the store and the CLI are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import cli, error_line, free_port

from harness_learning.evals.custom import DataTask
from harness_learning.evals.custom.task import MetricCheckFailed
from harness_learning.evals.evaluator import evaluate_sync
from harness_learning.evals.user_failures import UserCodeFailures
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning.harnesses.usertools import build_user_tools

PRICES = {"apple": 3, "pear": 5}
ROWS = [{"id": f"p-{item}", "question": f"What does one {item} cost?", "answer": str(price)}
        for item, price in [("apple", 3), ("pear", 5), ("durian", 9), ("kiwi", 2), ("fig", 4)]]
"""The catalogue lacks three items: their lookups raise, and the harness answers in words."""
METRIC = '''
def score(prediction, gold, example):
    """Whole-number prices must be equal."""
    return float(int(prediction) == int(gold))  # a non-number answer raises ValueError
'''
RAISING_METRIC = '''
def score(prediction, gold, example):
    return example["sku"] == gold  # the data has no `sku`: KeyError on every problem
'''
HALF_METRIC = '''
def score(prediction, gold, example):
    return 0.5
'''
TOOLS = f'''
PRICES = {PRICES!r}


def lookup(item: str) -> int:
    """The price of one `item` in the shop's catalogue."""
    if item not in PRICES:
        raise LookupError(f"no price for {{item!r}} in the catalogue")
    return PRICES[item]
'''
HARNESS = '''
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    def price(state: State) -> dict:
        item = state["question"].split()[-2]
        try:
            return {"answer": str(tools.call("lookup", item=item))}
        except Exception:
            return {"answer": "not in the catalogue"}

    graph = StateGraph(State)
    graph.add_node("price", price)
    graph.add_edge(START, "price")
    graph.add_edge("price", END)
    return graph
'''


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """The user's files: data, metrics (a good one and two bad ones), tool and harness."""
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    for name, text in [("metric.py", METRIC), ("raising.py", RAISING_METRIC),
                       ("half.py", HALF_METRIC), ("shop_tools.py", TOOLS),
                       ("harness.py", HARNESS)]:
        (tmp_path / name).write_text(text)
    return tmp_path


def _task(shop: Path, metric: str) -> DataTask:
    return DataTask(shop / "tasks.jsonl", metric=f"{shop / metric}:score", n_dev=5, n_test=0)


def test_run_refuses_a_metric_that_raises_on_a_gold_answer(shop: Path) -> None:
    result = cli("run", "--task", shop / "tasks.jsonl", "--metric", f"{shop}/raising.py:score",
                 "--harness", shop / "harness.py", "--tools", f"{shop}/shop_tools.py:lookup",
                 "--n", "0", cwd=shop)
    line = error_line(result)
    assert result.returncode == 2, result.stderr
    assert "raising.py:score" in line and "KeyError: 'sku'" in line and "problem 'p-" in line
    assert "hint: a metric must give a gold answer its maximum" in line
    assert "evaluating" not in result.stdout and "mean score" not in result.stdout


def test_adapt_refuses_it_before_anything_is_written(shop: Path) -> None:
    nobody = f"openai/m@http://127.0.0.1:{free_port()}/v1"  # never called: the check is first
    result = cli("adapt", "--task", shop / "tasks.jsonl", "--metric",
                 f"{shop}/raising.py:score", "--run-dir", shop / "run", "--rounds", "1",
                 "--solver", nobody, "--proposer", nobody, cwd=shop)
    assert result.returncode == 2, result.stderr
    assert "KeyError: 'sku'" in error_line(result) and "raising.py:score" in error_line(result)
    assert not (shop / "run" / "config.json").exists()


def test_a_metric_below_its_maximum_on_gold_is_refused_and_a_sound_one_passes(shop: Path) -> None:
    with pytest.raises(MetricCheckFailed, match=r"half\.py:score' gave 0\.5, below its maximum"):
        _task(shop, "half.py").check_metric()
    _task(shop, "metric.py").check_metric()  # int(gold) == int(gold) on every problem
    DataTask(shop / "tasks.jsonl", metric="regex", n_dev=5, n_test=0).check_metric()
    nobody = f"openai/m@http://127.0.0.1:{free_port()}/v1"
    judged = DataTask(shop / "tasks.jsonl", metric=f"judge:{nobody}", n_dev=5, n_test=0)
    judged.check_metric()  # a judge is not self-checked: no model call (none could answer)
    assert judged.metric.judge is not None and judged.metric.judge.calls == 0


def test_run_counts_metric_and_tool_errors_and_still_exits_0(shop: Path) -> None:
    result = cli("run", "--task", shop / "tasks.jsonl", "--metric", f"{shop}/metric.py:score",
                 "--harness", shop / "harness.py", "--tools", f"{shop}/shop_tools.py:lookup",
                 "--n", "0", "--split", "feedback", "--json", cwd=shop)
    assert result.returncode == 0, result.stderr
    dev = [p.id.removeprefix("p-") for p in DataTask(shop / "tasks.jsonl").dev()]  # run's split
    missing = [item for item in dev if item not in PRICES]
    assert missing and len(missing) < len(dev), "the data must give both outcomes"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["metric_errors"] == summary["tool_errors"] == len(missing), summary
    assert summary["mean_score"] == pytest.approx(1 - len(missing) / len(dev))
    assert "ValueError: invalid literal for int()" in summary["first_metric_error"]
    assert f"LookupError: no price for '{missing[0]}'" in summary["first_tool_error"]
    assert "metric_error" in result.stdout  # the table's error column
    assert f"metric errors: {len(missing)} problems scored 0" in result.stdout
    assert f"tool errors: {len(missing)} calls to your tools raised" in result.stdout


def test_show_and_report_count_them(shop: Path) -> None:
    task = _task(shop, "metric.py")
    tools = build_user_tools([_lookup(shop)], ["shop_tools.py:lookup"])
    source = (shop / "harness.py").read_text()
    results = evaluate_sync(source, task.dev(), task, Toolbox(user_tools=tools)).results
    failures = UserCodeFailures.of(results)
    assert (failures.metric_errors, failures.tool_errors) == (3, 3)
    bad = {r.problem_id: r for r in results if r.error_kind == "metric_error"}
    assert sorted(bad) == ["p-durian", "p-fig", "p-kiwi"]
    assert all(r.score == 0.0 and r.completed for r in bad.values())
    assert bad["p-fig"].answer == "not in the catalogue", "the answer the metric failed on is kept"
    run_dir = shop / "run"
    with SQLiteLogStore(run_dir) as store:
        store.init_run({"task": "tasks.jsonl"})
        store.put_results(store.put_version(source), "feedback", 1, results)
    shown = cli("show", run_dir)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "metric errors: 3 problems scored 0" in text and "tool errors: 3 calls" in text
    assert "LookupError: no price for '" in text
    reported = cli("report", run_dir)
    assert reported.returncode == 0, reported.stderr
    html = (run_dir / "report.html").read_text()
    assert "metric errors" in html and "3 problems scored 0" in html
    assert "tool errors" in html and "LookupError: no price for" in html


def _lookup(shop: Path):
    from harness_learning.evals.custom.imports import resolve

    return resolve(f"{shop}/shop_tools.py:lookup", "tool")


def test_adapt_ends_by_counting_them(shop: Path, sim_url: str) -> None:
    """A whole (short) adaptation on the simulated endpoint: the candidates' metric and tool
    errors never end it, and its last lines and JSON summary count them from the log."""
    model = f"openai/sim@{sim_url}"
    result = cli("adapt", "--task", shop / "tasks.jsonl", "--metric", f"{shop}/metric.py:score",
                 "--harness", shop / "harness.py", "--tools", f"{shop}/shop_tools.py:lookup",
                 "--run-dir", shop / "run", "--solver", model, "--proposer", model,
                 "--rounds", "1", "--candidates", "1", "--feedback", "2", "--selection", "2",
                 "--json", cwd=shop)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["metric_errors"] >= 1 and summary["tool_errors"] >= 1, summary
    assert "LookupError: no price for" in summary["first_tool_error"]
    assert "metric errors:" in result.stdout and "tool errors:" in result.stdout
