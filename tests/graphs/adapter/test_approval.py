"""The human approval gate: the adapter interrupts before adopting a candidate; a reviewer
approves one and rejects the next, and the rejection's reason reaches the next Proposer prompt.

Control flow only, so the Solver and Proposer are scripted; the task (reasoning-gym), the
sandbox workers, the evaluator and the SQLite log are real."""

from __future__ import annotations

import asyncio
import re

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from harness_learning.evals.registry import get_task
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.graph import build_adapter_graph
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.seeds import seed_source

REASON = "prompt marker B is not allowed by our style guide"
LINE = next(line for line in seed_source("reasoning_direct").splitlines()
            if line.startswith('PROMPT = """')).removeprefix('PROMPT = """')
EDIT = ('<<<<<<< SEARCH\nPROMPT = """{old}' + LINE + '\n=======\nPROMPT = """{new}' + LINE
        + "\n>>>>>>> REPLACE")


def proposer_rule(prompt: str, params: dict) -> str:
    """Round 1: add marker A. Round 2: swap it for B. After a rejection: an unusable reply."""
    if REASON in prompt:
        return "I have no further ideas."
    if "MARK-A " in prompt:
        return EDIT.format(old="MARK-A ", new="MARK-B ")
    return EDIT.format(old="", new="MARK-A ")


def make_solver_rule(golds: dict[str, str]):
    """Right answers only when the prompt carries a marker, so a marked candidate scores higher."""

    def rule(prompt: str, params: dict) -> str:
        if not re.search(r"MARK-[AB] ", prompt):
            return "Answer: I am not sure"
        gold = next(g for q, g in golds.items() if q in prompt)
        return f"Answer: {gold}"

    return rule


async def run_until_pause(app, payload, thread) -> list:
    """Stream until the graph stops; return the interrupts it stopped on (empty when done)."""
    async for _ in app.astream(payload, thread, stream_mode="updates"):
        pass
    state = await app.aget_state(thread)
    return [i for task in state.tasks for i in task.interrupts]


@pytest.mark.timeout(240)
def test_approve_once_reject_once(tmp_path, scripted) -> None:
    config = AdaptConfig(
        task="rg:basic_arithmetic", run_dir=str(tmp_path / "run"),
        task_options={"n_dev": 6, "n_test": 1}, rounds=3, candidates=1, policy="best_valid",
        edit_format="search_replace", feedback=2, selection=3, concurrency=3, approval=True,
    ).with_track_defaults("reasoning")
    task = get_task(config.task, **config.task_options)
    golds = {p.question: str(p.gold["answer"]) for p in task.dev()}
    proposer = scripted(proposer_rule)
    ctx = AdapterContext.from_config(config, task=task, solver=scripted(make_solver_rule(golds)),
                                     proposer=proposer)
    app = build_adapter_graph(ctx).compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "approval"}}

    async def scenario() -> tuple[list, list, dict]:
        async with ctx:
            first = await run_until_pause(app, {"task": config.task}, thread)
            second = await run_until_pause(app, Command(resume={"approve": True}), thread)
            done = await run_until_pause(
                app, Command(resume={"approve": False, "reason": REASON}), thread)
            assert done == [], "round 3's proposal is unusable: nothing to approve"
            return first, second, (await app.aget_state(thread)).values

    first, second, final = asyncio.run(scenario())

    # Round 1: the gate showed the marked candidate with its diff and scores.
    assert len(first) == 1 and first[0].value["round"] == 1
    assert f'+PROMPT = """MARK-A {LINE}' in first[0].value["diff"]
    assert first[0].value["selection_score"] == 1.0
    assert first[0].value["current_score"] == 0.0
    # Round 2: asked again (best_valid adopts B), this time rejected.
    assert len(second) == 1 and second[0].value["round"] == 2
    assert "MARK-B" in second[0].value["diff"]

    r1, r2, r3 = final["rounds"]
    assert (r1["approved"], r1["adopted"]) == (True, True)
    assert r1["chosen_sha"] != r1["current_sha"]
    assert (r2["approved"], r2["adopted"]) == (False, False)
    assert r2["chosen_sha"] == r2["current_sha"] == r1["chosen_sha"]
    assert REASON in r2["decision"]
    assert r3["candidates"][0]["valid"] is False and r3["approved"] is None
    assert final["current_sha"] == r1["chosen_sha"]
    assert any(REASON in note for note in final["human_feedback"])
    # The reason went into the next round's report, i.e. into the Proposer's prompt.
    assert len(proposer.calls) == 3
    assert REASON not in proposer.calls[1] and REASON in proposer.calls[2]
    # The decisions are in the execution log too.
    decisions = list(RunDir(config.path).open_store().iter_decisions())
    assert [d.chosen_sha for d in decisions] == [r1["chosen_sha"]] * 3
