"""GEPA's ideas as options of ours: the Pareto front and the `pareto` parent policy (pure), and
the merge of two candidates' edits end to end (real sandbox workers, scripted models: two edits
that each fix half of the problems; their merge fixes all), and the merge's own node between
`race` and `select`."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from scripted_sums import QUESTION, SumTask

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.graph import NODES, build_adapter_graph
from harness_learning.graphs.adapter.parents import merged_completion, parent_draw
from harness_learning.graphs.adapter.policies import Scored, decide, pareto, pareto_front
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import proposal_id


def test_the_front_keeps_versions_best_somewhere_and_drops_dominated_ones():
    archive = {"seed": {"p1": 0.0, "p2": 0.0, "p3": 0.0},
               "odd": {"p1": 1.0, "p2": 0.0, "p3": 0.0},
               "even": {"p1": 0.0, "p2": 1.0, "p3": 0.0},
               "half": {"p1": 1.0, "p2": 0.0, "p3": 0.0}}  # ties "odd" on p1: both lead it
    assert pareto_front(archive) == {"odd": 1, "even": 1, "half": 1}  # p3: nobody solves it
    archive["both"] = {"p1": 1.0, "p2": 1.0, "p3": 0.0}
    assert pareto_front(archive) == {"both": 2}  # it dominates every other version
    assert pareto_front({"a": {"p1": 0.0}}) == {}


def test_pareto_draws_the_parent_by_problems_led_and_falls_back_to_best_valid():
    archive = {"cur": {"p1": 1.0, "p2": 0.0, "p3": 0.0},
               "new": {"p1": 0.0, "p2": 1.0, "p3": 1.0}}
    current = Scored("cur", True, 1 / 3, -1)
    cands = [Scored("new", True, 2 / 3, 0)]
    low, high = pareto(current, cands, archive, 0.0), pareto(current, cands, archive, 0.9)
    assert (low.chosen_sha, low.adopted) == ("cur", False)  # leads 1 of 3 problem-wins
    assert (high.chosen_sha, high.adopted) == ("new", True)  # leads 2 of 3
    assert high.score == pytest.approx(2 / 3) and "front of 2" in high.reason
    none = decide("pareto", current, cands, {"cur": {"p1": 0.0}, "new": {"p1": 0.0}})
    assert none.chosen_sha == "new" and "no front" in none.reason
    assert parent_draw(3, 2) == parent_draw(3, 2) != parent_draw(3, 3)  # seeded by round


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


LINE1 = 'PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line'
LINE2 = 'in the form "Answer: <answer>".'
EDITS = [block(LINE1, LINE1.replace('"""', '"""ODD-FIX ')),   # right on odd first terms
         block(LINE2, LINE2 + " EVEN-FIX")]                   # right on even first terms


def solver_rule(prompt: str, params: dict) -> str:
    """Right on odd first terms only with ODD-FIX in the prompt, on even ones with EVEN-FIX."""
    match = QUESTION.search(prompt)
    a, b = int(match.group(1)), int(match.group(2))
    fixed = "ODD-FIX" in prompt if a % 2 else "EVEN-FIX" in prompt
    return f"Answer: {a + b if fixed else a + b + 1}"


def configured(tmp_path, scripted, policy: str,
               merge: bool = True) -> tuple[AdaptConfig, AdapterContext]:
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / policy), rounds=1, candidates=2,
                         policy=policy, merge=merge, edit_format="search_replace", feedback=6,
                         selection=6, concurrency=6).with_track_defaults("reasoning")
    return config, context(config, scripted)


def context(config: AdaptConfig, scripted) -> AdapterContext:
    return AdapterContext.from_config(
        config, task=SumTask(6), solver=scripted(solver_rule),
        proposer=scripted(lambda _p, params: EDITS[params["seed"] % 1009]))


def run(tmp_path, scripted, policy: str, merge: bool = True, on_update=None):
    config, ctx = configured(tmp_path, scripted, policy, merge)
    final = asyncio.run(run_adaptation(config, context=ctx, on_update=on_update))
    return final, RunDir(config.path).open_store()


@pytest.mark.parametrize("policy", ["best_valid", "pareto"])
def test_the_merge_of_two_half_fixes_is_judged_and_wins(tmp_path, scripted, policy):
    final, store = run(tmp_path, scripted, policy)
    (round1,) = final["rounds"]
    by_index = {c["index"]: c for c in round1["candidates"]}
    assert by_index[0]["selection_score"] == by_index[1]["selection_score"] == 0.5
    merged = by_index[2]  # logged after the round's samples, judged like one of them
    assert merged["valid"] and merged["selection_score"] == 1.0
    assert round1["adopted"] and final["current_sha"] == merged["sha"]
    source = store.get_version_source(final["current_sha"])
    assert "ODD-FIX" in source and "EVEN-FIX" in source
    proposal = store.get_proposal(proposal_id(1, 2))
    assert proposal.completion == merged_completion(EDITS[0], EDITS[1])
    assert "merge of candidates 0 and 1" in proposal.prompt[0]["content"]
    assert policy not in ("pareto",) or "pareto" in round1["decision"]
    store.close()


def test_a_merge_whose_edits_collide_is_an_invalid_candidate(tmp_path, scripted):
    """Both edits rewrite the same line: the second's SEARCH text is gone after the first."""
    EDITS[1] = block(LINE1, LINE1.replace('"""', '"""EVEN-FIX '))
    try:
        final, store = run(tmp_path, scripted, "best_valid")
    finally:
        EDITS[1] = block(LINE2, LINE2 + " EVEN-FIX")
    merged = {c["index"]: c for c in final["rounds"][0]["candidates"]}[2]
    assert not merged["valid"] and "unmatched" in merged["invalid_reason"]
    store.close()


def test_the_merge_is_its_own_node_and_off_it_logs_nothing(tmp_path, scripted):
    """race -> merge -> select; with `merge` off the node passes: no proposal at index
    `samples_per_round`, and the round's candidates are the Proposer's alone."""
    config, ctx = configured(tmp_path / "shape", scripted, "best_valid", merge=False)
    edges = {(e.source, e.target) for e in build_adapter_graph(ctx).compile().get_graph().edges}
    assert {("race", "merge"), ("merge", "select")} <= edges and ("race", "select") not in edges
    assert NODES.index("race") + 1 == NODES.index("merge") == NODES.index("select") - 1
    updates: list[tuple[str, dict]] = []
    final, store = run(tmp_path, scripted, "best_valid", merge=False,
                       on_update=lambda node, update: updates.append((node, update)))
    nodes = [node for node, _ in updates]
    at = nodes.index("merge")
    assert nodes[at - 1:at + 2] == ["race", "merge", "select"] and updates[at][1] == {}
    assert store.get_proposal(proposal_id(1, config.samples_per_round)) is None
    assert [c["index"] for c in final["rounds"][0]["candidates"]] == [0, 1]
    store.close()


def test_a_run_resumed_between_merge_and_select_judges_the_merge_once(tmp_path, scripted):
    """Stopped after `merge` (as by a kill), continued by a fresh graph and context on the same
    checkpoints: `select` adopts the merged candidate the state holds; its draft and diff are
    logged once."""
    config, ctx = configured(tmp_path, scripted, "best_valid")
    saver, thread = InMemorySaver(), {"configurable": {"thread_id": "merge"}}

    async def until(ctx: AdapterContext, payload, **stops) -> dict:
        async with ctx:
            app = build_adapter_graph(ctx).compile(checkpointer=saver, **stops)
            async for _ in app.astream(payload, thread, stream_mode="updates"):
                pass
            state = await app.aget_state(thread)
            return {"next": state.next, **state.values}

    paused = asyncio.run(until(ctx, {}, interrupt_after=["merge"]))
    assert paused["next"] == ("select",)
    assert sorted(c["index"] for c in paused["candidates"]) == [0, 1, 2]
    final = asyncio.run(until(context(config, scripted), None))
    merged = {c["index"]: c for c in final["rounds"][0]["candidates"]}[2]
    assert final["rounds"][0]["adopted"] and final["current_sha"] == merged["sha"]
    with RunDir(config.path).open_store() as store:
        diffs = [e for e in store.iter_events(kinds=["candidate_diff"])
                 if e.payload["proposal_id"] == proposal_id(1, 2)]
        assert len(diffs) == 1 and len(list(store.iter_proposals(round=1))) == 3
