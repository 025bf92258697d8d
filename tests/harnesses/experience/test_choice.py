"""Redaction and the learned choice's maths (harnesses/experience/redact.py, choice.py)."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.experience import Entry, Outcome, Signature
from harness_learning.harnesses.experience.choice import (
    PRIOR_OUTCOMES,
    Posterior,
    change_prior,
    posterior,
    posteriors,
    ranked,
    similarity,
    successes,
    thompson_draws,
    weighted,
)
from harness_learning.harnesses.experience.entry import operator_id, texts
from harness_learning.harnesses.experience.redact import MARK, Redactor, environment_secrets

AUTO = ["interpreter", "plan", "verify", "vote", "few_shot"]


def thompson_order(arms: list[str], posteriors: dict[str, Posterior], seed: int, round_: int,
                   bar: float = 0.0) -> list[str]:
    """The plan's ordering as `learned_plan` makes it: draws, then ranked."""
    return ranked(arms, thompson_draws(arms, posteriors, seed, round_), posteriors, bar)


def test_free_text_is_cleaned_and_leaking_code_withheld():
    red = Redactor(["What is 17 * 23?", "391", "ed"])
    dirty = Outcome("run", 1, 0, "t", "e.g. What is 17 * 23? gives 391, edited",
                    Signature((("wrong_answer", 1),), ("reads 391",), ("expected 391",)))
    entry = Entry("x", "edit", "proposer", "changed PROMPT", blocks=(("A", 'ANS = "391"'),),
                  diff='+ANS = "391"', outcomes=(dirty,))
    clean = red.entry(entry)
    assert clean.blocks == () and clean.diff == ""
    for text in texts(clean):
        assert not any(h in text for h in red.held), text
    assert MARK in clean.outcomes[0].description
    kept = red.entry(Entry("y", "edit", "proposer", "s", blocks=(("A", "B"),), diff="-A\n+B"))
    assert kept.blocks == (("A", "B"),)
    demos = red.entry(Entry("z", "edit", "proposer", "s", blocks=(("A", "DEMONSTRATIONS = []"),)))
    assert demos.blocks == ()


def test_credentials_are_cut():
    assert environment_secrets({"OPENAI_API_KEY": "sk-abcdefghijklmnop", "PORT": "8080",
                                "MY_TOKEN": "short"}) == ["sk-abcdefghijklmnop"]
    assert "sk-" not in Redactor([]).text("key sk-AAAAAAAAAAAAAAAAAAAA here")


def test_similarity_prefers_shared_terms_even_in_a_library_of_one():
    assert similarity("multiply two numbers", ["multiply large numbers"]) == [1.0]
    sims = similarity("count letters in a word", ["multiply numbers", "count the letters r"])
    assert sims[0] == 0.0 and sims[1] == 1.0
    assert similarity("anything", []) == []


def out(success: bool, desc="products multiply", gain=0.2) -> Outcome:
    score = 0.5 + (gain if success else -gain)
    return Outcome("r", 1, 0, "t", desc, Signature(), "kept", None, 0.5, score)


def test_posterior_adds_weights():
    p = posterior([(1.0, out(True)), (0.5, out(False)), (0.25, out(True))])
    assert (p.alpha, p.beta) == (2.25, 1.5) and p.evidence == pytest.approx(1.75)
    assert Posterior().mean == 0.5


def test_a_logged_changes_prior_is_the_librarys_rate_for_such_changes():
    edits = [Entry(f"e{i}", "edit", "proposer", "s", outcomes=(out(i == 0),)) for i in range(3)]
    block = Entry("b", "operator", "operator:plan", "s", operator="plan",
                  outcomes=(out(True), out(True)))
    prior = change_prior([*edits, block])  # the block's outcomes do not count
    rate = (1 + 0.5) / (3 + 1)
    assert prior.alpha == pytest.approx(PRIOR_OUTCOMES * rate)
    assert prior.beta == pytest.approx(PRIOR_OUTCOMES * (1 - rate))
    assert prior.evidence == 0.0
    assert change_prior([block]) == Posterior()
    updated = posterior([(0.5, out(False))], prior)
    assert updated.beta == pytest.approx(prior.beta + 0.5) and updated.evidence == 0.5
    each = posteriors([*edits, block], {e.id: [] for e in [*edits, block]})
    assert each["b"] == Posterior() and each["e1"] == prior


def test_many_weak_losing_edits_do_not_outdraw_a_proven_block():
    losers = [f"e{i}" for i in range(25)]
    block = {"interpreter": posterior([(0.5, out(True))] * 6)}
    entries = [Entry(a, "edit", "proposer", "s", outcomes=(out(False),)) for a in losers]
    firsts = {}
    for name, prior in [("uniform", Posterior()), ("library's", change_prior(entries))]:
        arms = {**block, **{a: posterior([(0.3, out(False))], prior) for a in losers}}
        firsts[name] = sum(thompson_order(list(arms), arms, s, 1)[0] == "interpreter"
                           for s in range(200))
    assert firsts["uniform"] < 100 < firsts["library's"]


def test_no_evidence_keeps_the_given_order_exactly():
    assert thompson_order(AUTO, {}, 0, 1) == AUTO
    assert thompson_order(AUTO, {a: Posterior() for a in AUTO}, 7, 3) == AUTO


def test_draws_are_seeded_by_seed_and_round_and_follow_the_evidence():
    strong = {"vote": Posterior(400, 1), "plan": Posterior(1, 400)}
    orders = {tuple(thompson_order(AUTO, strong, s, r)) for s in range(3) for r in range(1, 4)}
    assert all(o[0] == "vote" and o[-1] == "plan" for o in orders)
    assert thompson_order(AUTO, strong, 1, 2) == thompson_order(AUTO, strong, 1, 2)
    weak = {"vote": Posterior(2, 1)}
    assert len({tuple(thompson_order(AUTO, weak, s, 1)) for s in range(20)}) > 1  # explores


def test_weighted_and_successes_rank_by_similar_task():
    near = Entry(operator_id("a"), "edit", "proposer", "s", blocks=(("x", "y"),),
                 outcomes=(out(True, "letters count word", 0.1),))
    far = Entry(operator_id("b"), "edit", "proposer", "s", blocks=(("p", "q"),),
                outcomes=(out(True, "multiply products", 0.5),))
    lost = Entry(operator_id("c"), "edit", "proposer", "s", blocks=(("p", "q"),),
                 outcomes=(out(False, "letters count word"),))
    w = weighted([near, far, lost], "count the letters of a word")
    assert w[near.id][0][0] == 1.0 and w[far.id][0][0] == 0.0
    assert [e.id for e, _ in successes([far, near, lost], "count letters", 2)] == [near.id, far.id]
    assert successes([near, far], "count letters", 1)[0][1] == pytest.approx(0.1)


def test_an_arm_the_evidence_says_loses_is_not_tried_but_an_untried_block_is():
    evidence = {"vote": Posterior(1, 40), "plan": Posterior(40, 1), "verify": Posterior()}
    plans = [thompson_order(AUTO, evidence, s, 2, bar=0.5) for s in range(20)]
    untried = ["interpreter", "verify", "few_shot"]
    assert all(sorted(p) == sorted(["plan", *untried]) for p in plans)
    assert all("vote" in thompson_order(AUTO, evidence, s, 2) for s in range(20))  # no bar
    assert thompson_order(AUTO, {}, 0, 1, bar=0.5) == AUTO  # an empty library tries them all


def test_many_losing_arms_do_not_clear_the_bar_by_a_lucky_draw():
    """Whether an arm is paid for is its posterior mean's call, not its draw's: among 20 arms
    that each lost once (mean 1/3), some draw above 1/2 in nearly every round, and under a
    draw rule one of them would be tried every time."""
    losers = {f"edit{i}": Posterior(1, 2, 1, 1) for i in range(20)}
    arms = list(losers)
    lucky = [s for s in range(50)
             if max(thompson_draws(arms, losers, s, 1).values()) >= 0.5]
    assert len(lucky) >= 45
    assert all(thompson_order(arms, losers, s, 1, bar=0.5) == [] for s in range(50))
    proven = {**losers, "interpreter": Posterior(4, 1, 1, 1)}
    assert all(thompson_order([*arms, "interpreter"], proven, s, 1, bar=0.5) == ["interpreter"]
               for s in range(50))
