"""Every budget kind stops a run before an evaluation would start past it (graphs/adapter/
budget.py): the command exits 5 naming the budget, the refused evaluation never ran, and the
spend (with $) is in `show`. Against the simulated endpoint, whose token counts are fixed (so
a price gives exact dollars); the calls and tokens budgets also with the real local model."""

from __future__ import annotations

from pathlib import Path

import pytest
import sim_adapt
from cli_run import cli, error_line

from harness_learning.graphs.adapter.budget import budget_reason
from harness_learning.graphs.adapter.config import AdaptConfig, Budget
from harness_learning.graphs.adapter.estimate import estimate_budget
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import SQLiteLogStore

PRICE = "?price_in=100&price_out=200"
"""USD per million tokens: a round of the sim run costs about $0.2."""


def priced_args(url: str, run_dir: Path, *extra: str) -> list[str]:
    args = sim_adapt.adapt_args(url, str(run_dir), *extra)
    for flag in ("--solver", "--proposer"):
        args[args.index(flag) + 1] += PRICE
    return args


def stopped_before(run_dir: Path) -> tuple[dict, list[str]]:
    """The logged budget stop, and the notes of the version whose evaluation it refused."""
    with SQLiteLogStore(run_dir) as store:
        (stop,) = [e.payload for e in store.iter_events(kinds=["budget_stop"])]
        if stop["before"] == "proposer call":  # refused before it was sent: no candidate
            assert not list(store.iter_proposals())
            return stop, []
        sha = stop["before"].split(" of ", 1)[1].split()[0]
        refused = [v for v in store.iter_versions() if v.sha.startswith(sha)]
        assert not [e for e in store.iter_evaluations() if e.sha.startswith(sha)
                    and e.purpose == "selection"], "the refused evaluation never ran"
    return stop, [v.note for v in refused]


def usd(prompt_tokens: int, completion_tokens: int) -> float:
    return (prompt_tokens * 100 + completion_tokens * 200) / 1e6


def assert_priced(run_dir: Path) -> None:
    """Each Solver call made and each Proposer sample was charged its tokens at `PRICE`, and
    the ledger is their sum."""
    with SQLiteLogStore(run_dir) as store:
        calls = [c for e in store.iter_evaluations() for c in e.result.calls if c.tool == "llm"]
        drafts = {p.id: p for p in store.iter_proposals()}
        charged = {e.payload["proposal_id"]: e.payload["cost_usd"]
                   for e in store.iter_events(kinds=["proposer_cost"])}
        spent = store.spent()
    assert calls and all(c.meta["cost"] == pytest.approx(  # a cache hit costs nothing
        0.0 if c.cached else usd(c.meta["prompt_tokens"], c.meta["completion_tokens"]))
        for c in calls)
    assert any(c.meta["cost"] > 0 for c in calls)
    assert set(drafts) <= set(charged)
    # a sample that came back as the stop ended the run was paid but never became a proposal
    stopped_round = max(p.round for p in drafts.values()) if drafts else 1
    assert all(i.startswith(f"r{stopped_round}-") for i in set(charged) - set(drafts))
    assert all(charged[i] == pytest.approx(usd(p.prompt_tokens, p.completion_tokens))
               for i, p in drafts.items())
    assert spent["solver_cost_usd"] == pytest.approx(sum(c.meta["cost"] for c in calls))
    assert spent["cost_usd"] == pytest.approx(spent["solver_cost_usd"] + sum(charged.values()))


def test_the_budget_kinds_read_the_one_ledger() -> None:
    spent = {"solver_calls": 4, "tokens": 900, "cost_usd": 0.25}
    assert budget_reason(Budget(), spent) is None
    assert budget_reason(Budget(solver_calls=4), spent) == "solver-call budget 4 reached"
    assert budget_reason(Budget(solver_calls=5, tokens=900), spent) == "token budget 900 reached"
    assert budget_reason(Budget(cost_usd=0.25), spent) == "cost budget $0.25 reached"
    assert budget_reason(Budget(solver_calls=5, tokens=901, cost_usd=0.26), spent) is None


def test_the_estimate_prices_both_roles() -> None:
    base = dict(task="sums", run_dir="x", rounds=1, candidates=1, policy="strict",
                edit_format="search_replace", feedback=2, selection=3)
    url = "@http://127.0.0.1:9/v1"
    priced = estimate_budget(AdaptConfig(**base, solver=f"openai/s{url}?price_in=1&price_out=2",
                                         proposer=f"openai/p{url}?price_in=3&price_out=5"),
                             seed_source_text="tools.llm(q)")
    # 8 Solver calls (2 + 3 + 3 problems) of 400 + 256 tokens, 1 Proposer call of 3000 + 2048
    assert priced.solver_calls == 8 and priced.proposer_calls == 1
    assert priced.cost_usd == pytest.approx((8 * 400 + 8 * 256 * 2 + 3000 * 3 + 2048 * 5) / 1e6)
    assert "~$0.03 (upper bound" in priced.describe()
    local = estimate_budget(AdaptConfig(**base), seed_source_text="tools.llm(q)")
    assert local.cost_usd == 0.0 and "~$0.00" in local.describe()
    unpriced = estimate_budget(AdaptConfig(**base, solver=f"openai/s{url}"),
                               seed_source_text="tools.llm(q)")
    assert unpriced.cost_usd is None and "$ unknown" in unpriced.describe()


@pytest.mark.parametrize(("flag", "value", "kind"), [
    ("--max-cost-usd", "0.15", "cost budget $0.15"),  # a Solver call reserves up to ~$0.1
    ("--max-solver-calls", "5", "solver-call budget 5"),
    ("--max-tokens", "1000", "token budget 1000"),
])
def test_a_budget_stops_the_run_before_a_candidate_is_evaluated(
        sim_url: str, tmp_path: Path, flag: str, value: str, kind: str) -> None:
    run_dir = tmp_path / "run"
    result = cli(*priced_args(sim_url, run_dir, flag, value))
    assert result.returncode == 5, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"the run stopped early: {kind} reached" in error_line(result)
    assert f"stopped: {kind} reached" in result.stdout
    stop, notes = stopped_before(run_dir)
    # round 1's version in force ran its 2 + 3 problems (5 Solver calls, ~300 tokens, $0.03)
    assert stop["spent"]["solver_calls"] == 5
    if flag == "--max-solver-calls":  # two Proposer samples were drawn (they are no Solver
        # calls): a candidate's evaluation would start past the budget
        assert notes and all(n.startswith("candidate") for n in notes), stop["before"]
        assert stop["spent"]["proposer_calls"] >= 1
    else:  # a Proposer call reserves its prompt and its 2,048 max_tokens (~$0.4) first:
        # that share cannot fit, so no Proposer call was sent and no candidate exists
        assert stop["before"] == "proposer call" and not notes
        assert stop["spent"]["proposer_calls"] == 0
    assert_priced(run_dir)
    shown = cli("show", run_dir)
    assert shown.returncode == 0, shown.stderr
    assert f"stopped: {kind} reached" in shown.stdout
    with SQLiteLogStore(run_dir) as store:  # a Proposer call in flight at the stop still counts
        total = f"${store.spent()['cost_usd']:,.4f}"
    assert total in shown.stdout, "the spend table shows $"
    assert cli("report", run_dir, "--out", tmp_path / "r.html").returncode == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<th class=num>proposer $</th>" in html and f"<b>{total}</b>" in html


def test_a_cost_budget_without_a_price_is_refused_before_the_run(sim_url: str,
                                                                 tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = cli(*sim_adapt.adapt_args(sim_url, str(run_dir), "--max-cost-usd", "1"))
    assert result.returncode == 2
    assert "the solver openai/sim has no known price" in error_line(result)
    assert "price_in" in error_line(result) and not run_dir.exists()


@pytest.mark.parametrize(("flag", "value", "kind"), [
    ("--max-solver-calls", "2", "solver-call budget 2"),
    ("--max-tokens", "50", "token budget 50"),
])
def test_a_budget_stops_a_run_of_the_real_local_model(
        local_model_url: str, tmp_path: Path, flag: str, value: str, kind: str) -> None:
    """Two Solver calls fit a budget of 2: the version in force runs its feedback problems and
    the selection evaluation never starts. No call fits 50 tokens (a call reserves its prompt's
    bytes and its 256 max_tokens): the first is refused, the run stops having spent nothing."""
    run_dir = tmp_path / "run"
    result = cli("adapt", "--task", "rg:basic_arithmetic", "--run-dir", run_dir,
                 "--solver", "local", "--proposer", "local", "--rounds", "2", "--candidates",
                 "1", "--feedback", "2", "--selection", "2", "--dev", "4", "--test", "2",
                 flag, value)
    assert result.returncode == 5, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"the run stopped early: {kind} reached" in error_line(result)
    estimate = " ".join(result.stderr.split())  # the terminal may wrap it
    assert "tokens, ~$0.00 (upper bound" in estimate, "the estimate prices local models at 0"
    with SQLiteLogStore(run_dir) as store:
        (stop,) = [e.payload for e in store.iter_events(kinds=["budget_stop"])]
        spent = store.spent()
        evaluated = {(e.purpose, e.sha) for e in store.iter_evaluations()}
        proposals = list(store.iter_proposals())
    assert not proposals and spent["cost_usd"] == 0.0
    if flag == "--max-tokens":  # cut: the feedback evaluation's calls were refused, not sent
        assert stop["before"].startswith("feedback evaluation of ") and stop["cut"]
        assert not evaluated and spent["tokens"] == stop["spent"]["tokens"] == 0
        return
    # the version in force ran its 2 feedback problems (2 Solver calls); its selection
    # evaluation would start past the budget: it never ran, nor did the Proposer
    assert stop["before"].startswith("selection evaluation of ") and "cut" not in stop
    assert [p for p, _ in evaluated] == ["feedback"]
    assert spent["solver_calls"] == stop["spent"]["solver_calls"] == 2


MANY_CALLS = seed_source("reasoning_direct").replace(
    "        reply = tools.llm([*EXAMPLE, ask])\n",
    "        for _ in range(3):  # three one-token calls before the answer\n"
    "            tools.llm(state[\"question\"], max_tokens=1)\n"
    "        reply = tools.llm([*EXAMPLE, ask], max_tokens=12)\n")


def test_a_call_budget_binds_per_call_and_the_cut_candidate_is_not_judged(
        local_model_url: str, sim_url: str, tmp_path: Path) -> None:
    """The real local Solver, a harness making 4 calls a problem, 2 problems at once and a
    budget of 20 calls: the version in force spends 16; the candidate (the sim Proposer's
    edit) starts within the budget and its third call past 20 is refused before it is sent.
    The count never passes 20 (the log's and the ledger's), and the cut evaluation is neither
    judged nor adopted."""
    assert MANY_CALLS.count("tools.llm(") == 2, "the seed's Solver call was found"
    harness = tmp_path / "many_calls.py"
    harness.write_text(MANY_CALLS, encoding="utf-8")
    run_dir = tmp_path / "run"
    args = sim_adapt.adapt_args(sim_url, str(run_dir), "--harness", str(harness),
                                "--selection", "2", "--concurrency", "2",
                                "--max-solver-calls", "20")
    args[args.index("--solver") + 1] = "local"
    result = cli(*args)
    assert result.returncode == 5, result.stdout[-2000:] + result.stderr[-2000:]
    assert "the run stopped early: solver-call budget 20 reached" in error_line(result)
    with SQLiteLogStore(run_dir) as store:
        (stop,) = [e.payload for e in store.iter_events(kinds=["budget_stop"])]
        spent = store.spent()
        candidates = [v.sha for v in store.iter_versions() if v.note.startswith("candidate")]
        proposals = list(store.iter_proposals())
        lineage = store.lineage()
    assert spent["solver_calls"] <= 20 and stop["spent"]["solver_calls"] <= 20, (spent, stop)
    assert spent["solver_calls"] >= 16, "the version in force ran all its problems"
    (sha,) = candidates
    assert stop["before"] == f"selection evaluation of {sha[:12]} (round 1)" and stop["cut"]
    (edited,) = [p for p in proposals if "MARK-A" in p.completion]
    assert edited.selection_score is None and edited.reward is None, \
        "the cut evaluation was not judged"
    assert [s for _, s, _ in lineage] == [lineage[0][1]], "nothing was adopted"


CATCHES_REFUSALS = '''
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

class State(TypedDict, total=False):
    question: str
    answer: str

def build_graph(tools):
    def solve(state):
        for _ in range(2):
            try:
                tools.llm(state["question"], max_tokens=4)
            except Exception:
                pass  # the refusal is caught: the harness answers anyway
        return {"answer": "7"}
    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
'''


def test_a_harness_that_catches_a_refusal_is_still_cut(tmp_path: Path) -> None:
    """Control flow (a scripted Solver): a budget of 3 calls, 3 problems of 2 calls each. The
    third problem's calls are refused; its harness catches that and answers, yet the problem is
    not stored, the evaluation stops the run as cut, and 3 calls were counted, not 6."""
    import asyncio

    from scripted_sums import ScriptedModel, SumTask, solver_rule

    from harness_learning.graphs.adapter.budget import BudgetStop
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.graphs.adapter.nodes import evaluate_cached
    from harness_learning.harnesses.toolbox import Toolbox

    solver = ScriptedModel(solver_rule)
    config = AdaptConfig(task="sums", run_dir=str(tmp_path), rounds=1, candidates=1,
                         feedback=3, selection=3, concurrency=1,
                         budget=Budget(solver_calls=3)).with_track_defaults("reasoning")
    task = SumTask(3)
    ctx = AdapterContext.from_config(config, task=task, toolbox=Toolbox(solver=solver))
    store = ctx.store
    store.init_run({"test": "a caught refusal"})
    sha = store.put_version(CATCHES_REFUSALS, parent=None, round_=0, note="seed")

    async def go() -> None:
        async with ctx:
            await evaluate_cached(ctx, sha, task.dev(), "selection", 1)

    with pytest.raises(BudgetStop, match="solver-call budget 3 reached"):
        asyncio.run(go())
    with SQLiteLogStore(tmp_path) as log:
        (stop,) = [e.payload for e in log.iter_events(kinds=["budget_stop"])]
        stored = [e.problem_id for e in log.iter_evaluations()]
        spent = log.spent()
    assert stop["cut"] and not set(stop["cut"]) & set(stored), (stop, stored)
    assert len(stored) == 1 and spent["solver_calls"] == 2
    assert stop["spent"]["solver_calls"] == 3 and len(solver.calls) == 3


def test_a_judge_metrics_calls_are_counted_on_the_ledger_as_they_finish() -> None:
    """The judge metric's calls are Solver calls to every budget; made by the metric in the
    parent, they are not reserved, but each finished problem's are counted before the next
    Solver call reserves."""
    from types import SimpleNamespace

    from harness_learning.graphs.adapter.budget import charge_judged
    from harness_learning.harnesses.contract import JUDGE_OP, ToolCall
    from harness_learning.harnesses.llm.ledger import Caps, SpendLedger
    from harness_learning.harnesses.results import ProblemResult

    ledger = SpendLedger(Caps(solver_calls=10))
    calls = (ToolCall("llm", {}, "7", None, 0.1, 30, meta={"cost": 0.5}),
             ToolCall(JUDGE_OP, {}, "CORRECT", None, 0.1, 40, meta={"cost": 0.25}),
             ToolCall(JUDGE_OP, {}, "WRONG", None, 0.1, 45, meta={"cost": 0.25}))
    charge_judged(SimpleNamespace(ledger=ledger), ProblemResult("p", answer="7", calls=calls))
    assert ledger.settled == {"solver_calls": 2, "tokens": 85, "cost_usd": 0.5}
    charge_judged(SimpleNamespace(ledger=None), ProblemResult("p", calls=calls))  # no budget
