"""The racing rule (stages, early stop, halving, the winner) and the `race` node in a real
adapter run (real sandbox workers; scripted models, as in test_policies_e2e)."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.policies import Scored, decide
from harness_learning.graphs.adapter.racing import RaceRule, paired_gap, race
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import new_proposal, proposal_id


def run_race(table: dict[str, list[float]], rule: RaceRule | None = None):
    asked: list[tuple[str, int, int]] = []

    async def run(key: str, start: int, end: int) -> list[float]:
        asked.append((key, start, end))
        return table[key][start:end]

    n = len(next(iter(table.values())))
    return asyncio.run(race(list(table), n, run, rule)), asked


def test_stage_ends_are_cumulative_and_end_at_the_pool():
    assert RaceRule().stage_ends(64) == [20, 48, 64]
    assert RaceRule(fractions=(0.25, 0.5, 1.0)).stage_ends(64) == [16, 32, 64]
    assert RaceRule(fractions=(0.125, 0.25, 0.5, 1.0)).stage_ends(64) == [8, 16, 32, 64]
    assert RaceRule().stage_ends(6) == [4, 5, 6]
    assert RaceRule(fractions=(0.25, 0.5, 1.0)).stage_ends(6) == [4, 6]
    assert RaceRule(fractions=(0.5, 1.0)).stage_ends(3) == [3]
    with pytest.raises(ValueError, match="rise strictly to 1.0"):
        RaceRule(fractions=(0.5, 0.9))


def test_paired_gap_uses_the_differences():
    gap, se = paired_gap([1, 1, 0, 1], [1, 0, 0, 1])
    assert gap == pytest.approx(0.25) and se == pytest.approx(0.25)
    gap, se = paired_gap([1.0] * 4, [0.0] * 4)  # no spread: the fair-coin floor, not zero
    assert gap == 1.0 and se == pytest.approx(0.25)


def test_a_clear_loser_stops_after_the_first_stage_and_the_best_wins():
    table = {"a": [0.0] * 64, "b": [1.0] * 64, "c": [1.0, 0.0] * 32}
    result, asked = run_race(table, RaceRule(keep=None))
    assert result.winner == "b"
    assert result.standings["a"].raced_out and len(result.standings["a"].scores) == 20
    assert "behind the leader" in result.standings["a"].reason
    # c is behind b on every other problem: dropped once the evidence is strong enough
    assert result.standings["c"].raced_out
    assert ("a", 20, 48) not in asked and result.problems_run < 3 * 64


def test_the_last_one_standing_is_scored_on_the_whole_pool():
    """A lone entrant, or the survivor of an early cut, runs every problem: adopted on a mean over
    the first stage's few problems, it would beat fully evaluated versions by luck."""
    lone, asked = run_race({"only": [1.0] * 5 + [0.0] * 11}, RaceRule())
    assert len(lone.standings["only"].scores) == 16 and lone.standings["only"].mean == 5 / 16
    assert [(s["problems"], s["live"]) for s in lone.stages] == [(5, ["only"]), (16, ["only"])]
    assert lone.problems_run == RaceRule().max_problems(1, 16) == 16
    pair, _ = run_race({"a": [0.0] * 16, "b": [1.0] * 16}, RaceRule())  # keep 1 of 2 at 5
    assert pair.winner == "b" and len(pair.standings["b"].scores) == 16
    assert len(pair.standings["a"].scores) == 5 and pair.standings["a"].raced_out
    assert pair.problems_run == RaceRule().max_problems(2, 16) == 2 * 5 + 11


def test_ties_are_never_stopped_by_the_paired_test():
    same = [1.0, 0.0, 1.0, 1.0] * 16
    result, _ = run_race({"x": same, "y": list(same)}, RaceRule(keep=None))
    assert not any(s.raced_out for s in result.standings.values())
    assert result.problems_run == 128 and result.winner == "x"  # tie goes to the earlier one


def test_halving_keeps_the_better_half_of_each_stage():
    rng = __import__("random").Random(3)
    table = {f"k{i}": [float(rng.random() < 0.5) for _ in range(64)] for i in range(8)}
    halving = RaceRule(fractions=(0.25, 0.5, 1.0), keep=(0.5,), z=100.0)
    result, _ = run_race(table, halving)  # no early stop: halving alone
    assert [len(s["live"]) for s in result.stages] == [4, 2, 2]  # the last stage decides
    final = result.stages[-1]["live"]
    assert result.winner == max(final, key=lambda k: (sum(table[k]), -int(k[1:])))
    live_after_first = set(result.stages[0]["live"])
    means = {k: sum(v[:16]) / 16 for k, v in table.items()}
    assert min(means[k] for k in live_after_first) >= max(
        means[k] for k in table if k not in live_after_first)


def test_keep_sets_how_many_go_on_after_each_stage():
    rng = __import__("random").Random(4)
    table = {f"k{i}": [float(rng.random() < 0.5) for _ in range(64)] for i in range(8)}
    rule = RaceRule(fractions=(0.3125, 0.75, 1.0), keep=(0.5, 0.75), z=100.0)
    result, asked = run_race(table, rule)
    assert [s["problems"] for s in result.stages] == [20, 48, 64]
    assert [len(s["live"]) for s in result.stages] == [4, 3, 3]  # ceil(0.75 x 4) = 3
    assert result.problems_run == rule.max_problems(8, 64) == 8 * 20 + 4 * 28 + 3 * 16
    dropped = [s for s in result.standings.values() if s.raced_out]
    assert all("not among the best" in s.reason for s in dropped)
    # one entry applies to every stage, and the race ends once one candidate is left (at 32):
    # that one runs the other 32
    four = RaceRule(fractions=(0.125, 0.25, 0.5, 1.0), keep=(0.5,), z=100.0)
    assert four.max_problems(8, 64) == 8 * 8 + 4 * 8 + 2 * 16 + 1 * 32
    assert run_race(table, four)[0].problems_run == four.max_problems(8, 64)
    # None keeps all (full evaluation without a z-test)
    assert RaceRule(keep=None).max_problems(8, 64) == 512
    # a cut down to one candidate ends the race: only the survivor runs after it
    assert RaceRule(keep=(0.1,)).max_problems(8, 64) == 8 * 20 + 44
    assert RaceRule(fractions=(0.25, 0.5, 1.0), keep=(0.5,)).max_problems(8, 64) == 256


def test_the_default_rule_keeps_4_then_3_of_8():
    """The default is the measured "keep 4 then 3" (`bench racing --curve`): 20:4 48:3 64,
    1.6x fewer calls than full evaluation of 8 x 64."""
    rule = RaceRule()
    assert rule.stage_ends(64) == [20, 48, 64]
    assert [rule.survivors(0, 8), rule.survivors(1, 4)] == [4, 3]
    assert rule.max_problems(8, 64) == 8 * 20 + 4 * 28 + 3 * 16 == 320
    assert 512 / rule.max_problems(8, 64) == 1.6


def test_bad_rules_are_clear_errors():
    for keep in ((), (0.0,), (0.5, 1.5)):
        with pytest.raises(ValueError, match="keep must be None or fractions"):
            RaceRule(keep=keep)
    with pytest.raises(ValueError, match="unknown race rule keys \\['kep'\\]"):
        RaceRule.from_dict({"kep": [0.5]})
    assert RaceRule.from_dict({"keep": [0.5, 0.75], "z": 2}) == RaceRule(keep=(0.5, 0.75), z=2)


def test_racing_policy_never_picks_a_dropped_candidate():
    current = Scored("cur", True, 0.5, -1)
    dropped = Scored("early", True, 0.9, 0, raced_out=True)
    survivor = Scored("late", True, 0.6, 1)
    assert decide("racing", current, [dropped, survivor]).chosen_sha == "late"
    assert decide("best_valid", current, [dropped, survivor]).chosen_sha == "early"


# -- the race node in a real adapter run ------------------------------------------------------
SEED_LINE = 'PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line'


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


EDITS = [
    "no edit here",                                                             # unparseable
    block('        return {"answer": answer}', '        return {"answer": "0"}'),  # always wrong
    block(SEED_LINE, SEED_LINE.replace("Solve", "Solve CAREFULLY")),            # better
    block(SEED_LINE, SEED_LINE.replace("Solve the problem.", "Solve it.")),     # same as parent
]


def run_racing_round(tmp_path, scripted, race: RaceRule | None = None):
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "race"), rounds=1, candidates=4,
                         policy="racing", edit_format="search_replace", feedback=8, selection=8,
                         concurrency=8, race=race or RaceRule()).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(
        config, task=SumTask(8), solver=scripted(solver_rule),
        proposer=scripted(lambda prompt, params: EDITS[params["seed"] % 1009]))
    final = asyncio.run(run_adaptation(config, context=ctx))
    (round1,) = final["rounds"]
    return RunDir(config.path).open_store(), final, round1, {c["index"]: c for c in round1["candidates"]}


def test_race_node_evaluates_in_stages_and_adopts_the_better_edit(tmp_path, scripted):
    store, final, round1, by_index = run_racing_round(tmp_path, scripted)
    assert set(by_index) == {0, 1, 2, 3} and not by_index[0]["valid"]
    assert by_index[2]["valid"] and not by_index[2].get("raced_out")
    # after stage 1 (4 of 8 problems) both others are behind by more than z s.e.: race over,
    # and the survivor runs the other 4, so it is adopted on the whole selection set
    for loser in (1, 3):
        assert by_index[loser]["raced_out"] and by_index[loser]["evaluated"] == 4
    assert by_index[2]["evaluated"] == 8 and by_index[2]["selection_score"] == 1.0
    assert round1["adopted"] and final["current_sha"] == by_index[2]["sha"]
    stored = {r.problem_id for r in store.get_results(by_index[1]["sha"],
                                                      [f"d{i}" for i in range(1, 9)],
                                                      "selection").values()}
    assert len(stored) == 4  # the dropped candidate's other problems were never run
    proposal = store.get_proposal(proposal_id(1, 1))
    assert proposal.reward_parts["raced_out"] and proposal.selection_score == 0.0
    assert any(e.kind == "race" for e in store.iter_events())


def test_race_node_follows_the_configured_rule(tmp_path, scripted):
    # a rule that never drops anyone is full evaluation: every valid candidate runs all 8
    _, final, round1, by_index = run_racing_round(tmp_path, scripted, RaceRule(z=1e9, keep=None))
    for index in (1, 2, 3):
        assert by_index[index]["evaluated"] == 8 and not by_index[index].get("raced_out")
    assert round1["adopted"] and final["current_sha"] == by_index[2]["sha"]


@pytest.mark.slow
def test_race_node_with_the_real_local_solver(local_model_url, tmp_path):
    """The race over two stored candidates, their problems answered by the real local model:
    stages run, results land in the log, and each candidate is settled with its own count."""
    from harness_learning.evals.judge import NOTHING_SHOWN, check_candidate
    from harness_learning.graphs.adapter.race_round import race_candidates
    from harness_learning.graphs.adapter.racing import RaceRule
    from harness_learning.harnesses.llm import Completion
    from harness_learning.harnesses.seeds import seed_source

    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "real"), rounds=1, candidates=2,
                         policy="racing", edit_format="search_replace", feedback=2, selection=8,
                         concurrency=8, solver_params={"temperature": 0.0, "max_tokens": 24},
                         ).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(8))
    store = ctx.store
    store.init_run({"test": "racing"})
    seed = seed_source("reasoning_direct")
    parent = store.put_version(seed, parent=None, round_=0, note="seed")
    drafts = []
    for index, edit in enumerate(EDITS[2:]):
        done = Completion(text=edit, prompt_tokens=0, completion_tokens=0, latency_s=0.0,
                          finish_reason="stop", cached=False, model="fixed edit")
        proposal = new_proposal(1, index, "edit it", done, "search_replace", parent_sha=parent)
        store.put_proposal(proposal)
        outcome = check_candidate(seed, edit, "search_replace", "stop", track="reasoning",
                                  line_limit=config.line_limit)
        assert outcome.needs_evaluation
        drafts.append({"round": 1, "index": index, "proposal_id": proposal.id,
                       "outcome": outcome.to_dict(),
                       "sha": store.put_version(outcome.new_source, parent=parent, round_=1,
                                                note="c")})
    ids = [p.id for p in SumTask(8).dev()]

    solver = ctx.solver

    async def go():
        async with ctx:
            return await race_candidates(ctx, drafts, ids, 1, RaceRule(), exposure=NOTHING_SHOWN)

    settled = asyncio.run(go())
    store = RunDir(config.path).open_store()
    assert solver.stats.calls > 0  # the real model answered
    for view in settled:
        stored = store.get_results(view["sha"], ids, "selection")
        assert len(stored) == view["evaluated"] and view["evaluated"] in (4, 8)
        assert view["valid"] and 0.0 <= view["selection_score"] <= 1.0
        assert store.get_proposal(proposal_id(1, view["index"])).reward_parts["evaluated"] == view["evaluated"]
    # two candidates run the same stages; a drop after the first ends the race, and the
    # survivor runs the rest: either both ran all 8, or the dropped one 4 and the other 8
    counts = sorted((v["evaluated"], v["raced_out"]) for v in settled)
    assert counts in ([(8, False), (8, False)], [(4, True), (8, False)])
