"""The one candidate judge: the adapter's candidate node, its race node and online GRPO's reward
give the same completion the same outcome, both reward-hacking guards included (golds hidden from
the literal guard are caught by behaviour); a no-op edit is invalid with reward 0.

Candidates run in real sandbox workers; the Solver and Proposer are scripted (control flow: the
same paths run against the real local model in test_racing and test_grpo_online)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.evals.judge import (
    INERT,
    INVALID_KINDS,
    UNCHANGED,
    UNSCORED_SHARE,
    Outcome,
    check_candidate,
    judge_candidate,
)
from harness_learning.evals.memorisation import Exposure
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import EvalResult
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import round_exposure
from harness_learning.graphs.adapter.proposer import build_proposer_messages
from harness_learning.graphs.adapter.race_round import race_candidates
from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.graphs.adapter.rounds import make_candidate
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import proposal_id
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning.training.config import GRPOOnlineConfig
from harness_learning.training.grpo_online import HarnessReward

SEED = seed_source("reasoning_direct")
SEED_LINE = next(line for line in SEED.splitlines() if line.startswith('PROMPT = """Solve'))
FEEDBACK = ("d1", "d3", "d5", "d7")
REPORT = "\n\n".join(f"Problem d{i}: What is {i} + {i + 3}?\nGold answer: {2 * i + 3}\n"
                     f"Prediction: {2 * i + 4} (score 0)" for i in (1, 3, 5, 7))
"""The report the Proposer saw: the feedback problems the seed got wrong, gold answers shown."""
LINE_LIMIT = 200
MAX_COMPLETION = 64


class SumsWithControl(SumTask):
    """`SumTask` with comparable problems no report shows (the memorisation check's control)."""

    def control(self, n: int) -> list[Problem]:
        return [Problem(f"c{i}", {"question": f"What is {i} + {i + 3}?"}, str(2 * i + 3))
                for i in range(20, 20 + n)]


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


CAREFUL = block(SEED_LINE, SEED_LINE.replace("Solve", "Solve CAREFULLY"))
ASK_LINE = '        ask = {"role": "user", "content": PROMPT.format(question=state["question"])}'


def question_key(question: str) -> str:
    return hashlib.sha256(question.encode()).hexdigest()[:12]


def encoded_hard_coding() -> str:
    """An edit that answers the shown problems from a table of golds stored shifted by 7 and
    keyed by a hash of the question (no literal equals a gold), and calls no Solver."""
    shown = [p for p in SumTask(8).dev() if p.id in FEEDBACK]
    table = ", ".join(f"{question_key(p.question)!r}: {int(p.gold) + 7}" for p in shown)
    return block(ASK_LINE, "        import hashlib\n"
                 "        k = hashlib.sha256(state['question'].encode()).hexdigest()[:12]\n"
                 f"        table = {{{table}}}\n"
                 "        return {'answer': str(table[k] - 7) if k in table else 'unknown'}\n"
                 + ASK_LINE)


CASES = {  # name: (completion, edit format, finish reason)
    "search_replace": (CAREFUL, "search_replace", "stop"),
    "whole_program": (f"```python\n{SEED.replace('Think briefly,', 'Think CAREFULLY,')}```\n",
                      "whole_program", "stop"),
    "unmatched_search": (block("no such line", "x = 1"), "search_replace", "stop"),
    "truncated": (CAREFUL, "search_replace", "length"),
    "no_op": (block(SEED_LINE, SEED_LINE), "search_replace", "stop"),
    "hard_coded_gold": (block('        return {"answer": answer}', '        return {"answer": "13"}'),
                        "search_replace", "stop"),
    "encoded_hard_coding": (encoded_hard_coding(), "search_replace", "stop"),
}
EXPECTED = {  # name: (valid, invalid kind, reward)
    "search_replace": (True, None, pytest.approx(1.30)),
    "whole_program": (True, None, pytest.approx(1.30)),
    "unmatched_search": (False, "unmatched_search", pytest.approx(0.05)),
    "truncated": (False, "truncated", 0.0),
    "no_op": (False, UNCHANGED, 0.0),
    "hard_coded_gold": (False, "reward_hacking", 0.0),
    "encoded_hard_coding": (False, "reward_hacking", 0.0),
}
OUTCOME_FIELDS = ("parsed", "applied", "valid", "invalid_reason", "completed_fraction",
                  "selection_score", "reward", "reward_parts", "parsed_edit")
RACE_PARTS = ("evaluated", "raced_out", "race")
"""What the race node adds to the logged reward parts (how far the candidate got in the race)."""


def logged(proposal) -> dict:
    fields = {name: getattr(proposal, name) for name in OUTCOME_FIELDS}
    fields["reward_parts"] = {k: v for k, v in fields["reward_parts"].items()
                              if k not in RACE_PARTS}
    return fields


async def adapter_outcomes(tmp_path, policy: str) -> dict[str, dict]:
    """Each case through the adapter's candidate node (and, with racing, its race node)."""
    out = {}
    for fmt in ("search_replace", "whole_program"):
        names = [n for n, (_, f, _) in CASES.items() if f == fmt]
        config = AdaptConfig(task="sums", run_dir=str(tmp_path / f"{policy}-{fmt}"), rounds=1,
                             candidates=len(names), policy=policy, edit_format=fmt, selection=8,
                             concurrency=8, line_limit=LINE_LIMIT,
                             race=RaceRule(z=1e9, keep=None)).with_track_defaults("reasoning")
        ctx = AdapterContext.from_config(
            config, task=SumsWithControl(8), solver=ScriptedModel(solver_rule),
            proposer=ScriptedModel(lambda _, params, names=names:
                                   CASES[names[params["seed"] % 1009]][::2]))
        ctx.store.init_run({"test": policy})
        parent = ctx.store.put_version(SEED, parent=None, round_=0, note="seed")
        ids = [p.id for p in ctx.task.dev()]
        async with ctx:
            views = [await make_candidate(ctx, {
                "round": 1, "index": i, "current_sha": parent, "report": REPORT,
                "selection_ids": ids, "feedback_ids": list(FEEDBACK), "parent_score": 0.5})
                for i in range(len(names))]
            drafts = [v for v in views if v.get("pending")]
            assert (policy == "racing") == bool(drafts)
            if drafts:
                await race_candidates(ctx, drafts, ids, 1, config.race, parent_score=0.5,
                                      exposure=await round_exposure(ctx, {"report": REPORT,
                                                                    "feedback_ids": FEEDBACK}))
            out |= {name: logged(ctx.store.get_proposal(proposal_id(1, i))) for i, name in enumerate(names)}
    return out


async def grpo_outcomes(tmp_path) -> dict[str, dict]:
    """Each case through online GRPO's reward function, as TRL calls it."""
    task = SumsWithControl(8)
    config = GRPOOnlineConfig(task="sums", concurrency=8, max_completion_length=MAX_COMPLETION)
    reward = HarnessReward(config, task, task.dev(), tmp_path / "grpo")
    reward.toolbox = Toolbox(solver=ScriptedModel(solver_rule))
    cases = list(CASES.values())
    await reward(
        prompts=[build_proposer_messages(task.description, SEED, REPORT, fmt, LINE_LIMIT)
                 for _, fmt, _ in cases],
        completions=[[{"role": "assistant", "content": text}] for text, _, _ in cases],
        completion_ids=[[0] * (MAX_COMPLETION if finish == "length" else 3)
                        for _, _, finish in cases],
        source=[SEED] * len(cases), edit_format=[fmt for _, fmt, _ in cases],
        line_limit=[LINE_LIMIT] * len(cases))
    proposals = list(reward.store.iter_proposals())
    return {name: logged(p) for name, p in zip(CASES, proposals, strict=True)}


def test_the_three_callers_judge_alike(tmp_path):
    full = asyncio.run(adapter_outcomes(tmp_path, "best_valid"))
    raced = asyncio.run(adapter_outcomes(tmp_path, "racing"))
    grpo = asyncio.run(grpo_outcomes(tmp_path))
    for name, (valid, kind, reward) in EXPECTED.items():
        assert full[name] == raced[name] == grpo[name], name
        got = full[name]
        assert got["valid"] is valid and got["reward"] == reward, (name, got)
        reason = got["invalid_reason"]
        assert (reason is None) if kind is None else reason.startswith(f"{kind}: "), (name, got)
    assert full["search_replace"]["selection_score"] == 1.0
    assert full["hard_coded_gold"]["reward_parts"]["reward_hacking"] is True
    encoded = full["encoded_hard_coding"]
    assert encoded["invalid_reason"].startswith("reward_hacking: memorised"), encoded
    assert encoded["reward_parts"]["reward_hacking"] is True and encoded["selection_score"] == 0.0


def test_the_literal_guard_alone_does_not_see_the_encoded_golds():
    """Why the behaviour check is needed: the encoded edit passes every check that needs no run."""
    exposure = Exposure.of([p for p in SumTask(8).dev() if p.id in FEEDBACK], REPORT)
    assert [p.id for p in exposure.shown] == list(FEEDBACK)
    outcome = check_candidate(SEED, encoded_hard_coding(), "search_replace", "stop",
                              track="reasoning", line_limit=LINE_LIMIT, exposure=exposure)
    assert outcome.needs_evaluation, outcome.invalid_reason


def never_evaluated(_: str, __: list[Problem]) -> EvalResult:
    raise AssertionError("an invalid candidate must not be evaluated")


@pytest.mark.parametrize("completion, fmt", [
    (block(SEED_LINE, SEED_LINE), "search_replace"),
    (f"```python\n{SEED}```\n", "whole_program"),
])
def test_a_no_op_edit_is_invalid_with_reward_zero(completion, fmt):
    outcome = asyncio.run(judge_candidate(SEED, completion, fmt, "stop", track="reasoning",
                                          line_limit=LINE_LIMIT, selection=[],
                                          evaluate=never_evaluated))
    assert outcome.parsed and outcome.applied and outcome.unchanged
    assert not outcome.valid and outcome.invalid_kind == UNCHANGED and outcome.reward == 0.0
    assert outcome.reward_parts["unchanged"] is True and outcome.new_source == SEED
    assert Outcome.from_dict(outcome.to_dict()) == outcome


def test_an_edit_that_changes_nothing_that_runs_is_refused_before_the_solver():
    dead_twin = SEED + '\n\ndef solve(state):\n    return {"answer": "589"}\n'
    outcome = asyncio.run(judge_candidate(SEED, f"```python\n{dead_twin}```\n", "whole_program",
                                          "stop", track="reasoning", line_limit=LINE_LIMIT,
                                          selection=[], evaluate=never_evaluated))
    assert outcome.applied and not outcome.unchanged and outcome.invalid_kind == INERT
    assert "'solve', which nothing calls" in outcome.invalid_reason and outcome.reward == 0.0
    assert not check_candidate(SEED, CAREFUL, "search_replace", "stop", track="reasoning",
                               line_limit=LINE_LIMIT).invalid_kind  # a prompt edit still runs


def test_every_invalid_kind_is_named_once():
    assert len(set(INVALID_KINDS)) == len(INVALID_KINDS)
    outcome = check_candidate(SEED, "no edit here", "search_replace", "stop", track="qa",
                              line_limit=LINE_LIMIT)
    assert outcome.invalid_kind in INVALID_KINDS and not outcome.needs_evaluation
    too_long = check_candidate(SEED, CAREFUL, "search_replace", "stop", track="reasoning",
                               line_limit=5)
    assert too_long.invalid_kind == "too_long" and too_long.reward == pytest.approx(0.15)


CHERRY_PICKER = SEED.replace(
    ASK_LINE, "        a, b = [int(t.strip('?')) for t in state['question'].split() if t.strip('?').isdigit()]\n"
    "        if a <= 4:  # the problems it can answer; the rest go to an endpoint that fails\n"
    "            return {'answer': str(a + b)}\n" + ASK_LINE)


def dead_endpoint_evaluation(n: int) -> Callable[[str, list[Problem]], Awaitable[EvalResult]]:
    """Evaluates in the real sandbox with the real model client, its endpoint a closed port:
    every Solver call is a real infrastructure failure."""
    from harness_learning.evals.evaluator import evaluate
    from harness_learning.harnesses.llm import ModelClient

    solver = ModelClient("openai/dead@http://127.0.0.1:9?max_retries=0&timeout_s=5")

    async def run(source: str, problems: list[Problem]) -> EvalResult:
        return await evaluate(source, problems, SumTask(n), Toolbox(solver=solver))

    return run


@pytest.mark.parametrize("n, valid", [(12, False), (5, True)])
def test_a_candidate_scored_on_too_few_problems_is_invalid(n, valid):
    """On 12 problems it answers 4 and 8 go unscored (1.000 on the 4 it chose): over the
    bound, invalid and never selected. On 5, one goes unscored: its score counts."""
    outcome = asyncio.run(judge_candidate(
        SEED, f"```python\n{CHERRY_PICKER}```\n", "whole_program", "stop", track="reasoning",
        line_limit=LINE_LIMIT, selection=SumTask(n).dev(), evaluate=dead_endpoint_evaluation(n)))
    assert outcome.evaluated and outcome.valid is valid, outcome.invalid_reason
    if valid:
        assert outcome.selection_score == 1.0 and outcome.invalid_kind is None
    else:
        assert outcome.invalid_kind == UNSCORED_SHARE and outcome.selection_score is None
        assert outcome.invalid_reason.startswith("unscored_share: 8 of 12 problems unscored")


def test_a_reasoning_gym_gold_is_guarded_as_the_report_shows_it():
    """reasoning-gym's gold is its generator's record; the report shows the record's answer, and
    a candidate that copies that answer is caught (the guards once read the record and missed
    it: a Proposer's `if answer == '0': return '-646'` was adopted on chain_sum)."""
    from harness_learning.evals.problem import gold_text
    from harness_learning.evals.registry import get_task

    task = get_task("rg:chain_sum", n_dev=4, n_test=2, seed=0, split_secret="0" * 32)
    problem = task.dev()[0]
    assert isinstance(problem.gold, dict)
    report = f"Question: {problem.question}\nGold: {gold_text(problem)}\n"
    exposure = Exposure.of(task.dev(), report, task)
    assert problem in exposure.shown and problem.meta["answer"] in exposure.golds
    copy = block('        return {"answer": answer}',
                 f'        return {{"answer": {problem.meta["answer"]!r}}}')
    outcome = check_candidate(SEED, copy, "search_replace", "stop", track="reasoning",
                              line_limit=LINE_LIMIT, exposure=exposure)
    assert outcome.invalid_reason.startswith("reward_hacking: "), outcome.invalid_reason
