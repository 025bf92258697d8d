"""The one candidate judge: the adapter's candidate node, its race node and online GRPO's reward
give the same completion the same outcome; a no-op edit is invalid with reward 0.

Candidates run in real sandbox workers; the Solver and Proposer are scripted (control flow: the
same paths run against the real local model in test_racing and test_grpo_online)."""

from __future__ import annotations

import asyncio

import pytest
from harness_learning.evals.judge import (
    INVALID_KINDS,
    UNCHANGED,
    Outcome,
    check_candidate,
    judge_candidate,
)
from harness_learning.evals.result import EvalResult
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.nodes import make_candidate
from harness_learning.graphs.adapter.proposer import build_proposer_messages
from harness_learning.graphs.adapter.race_round import race_candidates
from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning.training.config import GRPOOnlineConfig
from harness_learning.training.grpo_online import HarnessReward
from scripted_sums import ScriptedModel, SumTask, solver_rule

SEED = seed_source("reasoning_direct")
SEED_LINE = next(line for line in SEED.splitlines() if line.startswith('PROMPT = """Solve'))
REPORT = "Problem d5: What is 5 + 8?\nGold answer: 13\nPrediction: 14 (score 0)"
"""The report the Proposer saw: it shows problem d5's gold answer, 13."""
LINE_LIMIT = 200
MAX_COMPLETION = 64


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


CAREFUL = block(SEED_LINE, SEED_LINE.replace("Solve", "Solve CAREFULLY"))
CASES = {  # name: (completion, edit format, finish reason)
    "search_replace": (CAREFUL, "search_replace", "stop"),
    "whole_program": (f"```python\n{SEED.replace('Think briefly,', 'Think CAREFULLY,')}```\n",
                      "whole_program", "stop"),
    "unmatched_search": (block("no such line", "x = 1"), "search_replace", "stop"),
    "truncated": (CAREFUL, "search_replace", "length"),
    "no_op": (block(SEED_LINE, SEED_LINE), "search_replace", "stop"),
    "hard_coded_gold": (block('        return {"answer": answer}', '        return {"answer": "13"}'),
                        "search_replace", "stop"),
}
EXPECTED = {  # name: (valid, invalid kind, reward)
    "search_replace": (True, None, pytest.approx(1.30)),
    "whole_program": (True, None, pytest.approx(1.30)),
    "unmatched_search": (False, "unmatched_search", pytest.approx(0.05)),
    "truncated": (False, "truncated", 0.0),
    "no_op": (False, UNCHANGED, 0.0),
    "hard_coded_gold": (False, "reward_hacking", 0.0),
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
            config, task=SumTask(8), solver=ScriptedModel(solver_rule),
            proposer=ScriptedModel(lambda _, params, names=names:
                                   CASES[names[params["seed"] % 1009]][::2]))
        ctx.store.init_run({"test": policy})
        parent = ctx.store.put_version(SEED, parent=None, round_=0, note="seed")
        ids = [p.id for p in ctx.task.dev()]
        async with ctx:
            views = [await make_candidate(ctx, {
                "round": 1, "index": i, "current_sha": parent, "report": REPORT,
                "selection_ids": ids, "feedback_ids": ["d5"], "parent_score": 0.5})
                for i in range(len(names))]
            drafts = [v for v in views if v.get("pending")]
            assert (policy == "racing") == bool(drafts)
            if drafts:
                await race_candidates(ctx, drafts, ids, 1, config.race, parent_score=0.5)
            out |= {name: logged(ctx.store.get_proposal(1, i)) for i, name in enumerate(names)}
    return out


async def grpo_outcomes(tmp_path) -> dict[str, dict]:
    """Each case through online GRPO's reward function, as TRL calls it."""
    task = SumTask(8)
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


def never_evaluated(_: str) -> EvalResult:
    raise AssertionError("an invalid candidate must not be evaluated")


@pytest.mark.parametrize("completion, fmt", [
    (block(SEED_LINE, SEED_LINE), "search_replace"),
    (f"```python\n{SEED}```\n", "whole_program"),
])
def test_a_no_op_edit_is_invalid_with_reward_zero(completion, fmt):
    outcome = asyncio.run(judge_candidate(SEED, completion, fmt, "stop", track="reasoning",
                                          line_limit=LINE_LIMIT, evaluate=never_evaluated))
    assert outcome.parsed and outcome.applied and outcome.unchanged
    assert not outcome.valid and outcome.invalid_kind == UNCHANGED and outcome.reward == 0.0
    assert outcome.reward_parts["unchanged"] is True and outcome.new_source == SEED
    assert Outcome.from_dict(outcome.to_dict()) == outcome


def test_every_invalid_kind_is_named_once():
    assert len(set(INVALID_KINDS)) == len(INVALID_KINDS)
    outcome = check_candidate(SEED, "no edit here", "search_replace", "stop", track="qa",
                              line_limit=LINE_LIMIT)
    assert outcome.invalid_kind in INVALID_KINDS and not outcome.needs_evaluation
    too_long = check_candidate(SEED, CAREFUL, "search_replace", "stop", track="reasoning",
                               line_limit=5)
    assert too_long.invalid_kind == "too_long" and too_long.reward == pytest.approx(0.15)
