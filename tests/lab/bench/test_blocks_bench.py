"""`bench blocks` and `bench proposer-prompt`: their arithmetic, their inputs, and one real arm."""

from __future__ import annotations

import json

import pytest

from harness_learning.evals.registry import get_task
from harness_learning_lab.bench import blocks, proposer_prompt


def test_the_paired_interval_brackets_the_mean_gain() -> None:
    base, arm = [0, 0, 1, 0, 1, 0, 0, 1], [1, 1, 1, 0, 1, 1, 0, 1]
    gain, lo, hi = blocks.paired_interval(base, arm)
    assert gain == pytest.approx(3 / 8) and lo <= gain <= hi and lo >= 0.0
    assert blocks.paired_interval(base, base) == (0.0, 0.0, 0.0)


def test_a_block_that_does_not_fit_the_tasks_seed_is_refused() -> None:
    task = get_task("rg:products", n_dev=2, n_test=2)
    assert "with_interpreter" in blocks.arm_source(task, "interpreter")
    with pytest.raises(ValueError, match="does not fit rg:products's seed: the harness never "
                                         "calls tools.search"):
        blocks.arm_source(task, "extra_hop")


def test_every_qa_arm_applies_to_the_qa_seed(data_dir, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(data_dir))
    task = get_task("musique", n_dev=2, n_test=2, seed=0)
    assert {"passages", "short_answer"} <= set(blocks.QA_BLOCKS)
    for arm in blocks.QA_BLOCKS:
        block = blocks.OPERATORS[arm].block
        assert f"return {block}(tools, build_graph_before_{arm})" in blocks.arm_source(task, arm)


@pytest.mark.slow
def test_one_real_arm_is_kept_and_resumed(tmp_path, local_model_url) -> None:
    params = {"temperature": 0.0, "max_tokens": 64}
    rows = blocks.run(["rg:chain_sum"], ["plan"], 2, tmp_path, "local:smollm2-135m", params, {})
    assert [r["arm"] for r in rows] == ["seed", "plan"] and all(r["n"] == 2 for r in rows)
    plan = json.loads((tmp_path / "rg_chain_sum__plan.json").read_text())
    assert rows[1]["llm_calls_per_problem"] == plan["llm_calls"] / 2 >= 2  # the plan is a call
    assert len(plan["answers"]) == 2 and all(a is None or isinstance(a, str)
                                              for a in plan["answers"])
    again = blocks.run(["rg:chain_sum"], ["plan"], 2, tmp_path, "nobody:no-model", params, {})
    assert again == rows  # resumed from the files: no model was asked
    assert "| rg:chain_sum | plan | 2 |" in blocks.table(rows)


def test_qa_arms_carry_token_f1_beside_exact_match(data_dir, monkeypatch) -> None:
    from harness_learning.harnesses.results import ProblemResult

    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(data_dir))
    task = get_task("musique", n_dev=2, n_test=2, seed=0)
    problems = task.test()
    gold = problems[0].gold if isinstance(problems[0].gold, str) else problems[0].gold[0]
    results = [ProblemResult(problems[0].id, answer=f"{gold} indeed", score=0.0),
               ProblemResult(problems[1].id, error="boom", error_kind="harness")]
    f1 = blocks.f1_scores(task, problems, results)
    assert 0.0 < f1[0] < 1.0 and f1[1] == 0.0  # partly right, and an error scores 0
    assert blocks.f1_scores(get_task("rg:products", n_test=2), problems, results) is None
    rows = [{"task": "musique", "arm": "seed", "n": 2, "mean": 0.0, "gain": 0.0,
             "ci95": [0.0, 0.0], "llm_calls_per_problem": 3.0, "wall_s": 1.0, "f1": 0.25}]
    assert "| musique | seed | 2 | 0.000 | 0.250 | - | 3.0 | 1.0 |" in blocks.table(rows)
    assert "F1" not in blocks.table([{k: v for k, v in rows[0].items() if k != "f1"}])
    # an arm kept by an earlier version (no F1) still loads
    old = blocks.Arm(task="t", arm="seed", scores=[1.0], llm_calls=1, wall_s=0.1)
    assert old.f1 is None and old.answers is None


def test_the_committed_reports_cover_three_reasoning_tasks_and_a_qa_task() -> None:
    rows = [json.loads(line) for line in proposer_prompt.REPORTS.read_text().splitlines()]
    tasks = {r["task"] for r in rows}
    assert len(rows) >= 30 and "musique" in tasks and len(tasks - {"musique"}) >= 3
    assert all(r["report"].strip() and "def build_graph" in r["source"] for r in rows)
    assert all(len(r["selection"]) == proposer_prompt.SELECTION for r in rows)


def test_the_prompt_summary_counts_every_attempt() -> None:
    results = [
        {"prompt": "old", "attempts": ["unmatched_search"], "valid": False, "changed": None},
        {"prompt": "old", "attempts": [None], "valid": True, "changed": False},
        {"prompt": "new", "attempts": ["malformed_block", None], "valid": True, "changed": True,
         "selection_gain": 0.25},
        {"prompt": "new", "attempts": [None], "valid": True, "changed": False,
         "selection_gain": 0.0},
    ]
    old, new = proposer_prompt.summary(results)
    assert (old["completions"], old["valid"], old["valid_rate"]) == (2, 1, 0.5)
    assert (new["completions"], new["valid"], new["valid_rate"]) == (3, 2, 0.667)
    assert new["changing_share"] == 0.5 and new["invalid_kinds"] == {"malformed_block": 1}
    assert new["valid_rate_ci95"] == [0.094, 0.992]  # Clopper-Pearson, 2 of 3
    assert new["valid_better"] == 1 and old["valid_better"] is None  # old: stored without it
    text = proposer_prompt.table([old, new])
    assert "| new | 2 | 3 | 2 | 0.667 [0.094, 0.992] | 1 (0.500) | 1 | malformed_block 1 |" in text
    assert "| old | 2 | 2 | 1 | 0.500 [0.013, 0.987] | 0 (0.000) | n/a | unmatched_search 1 |" in text


def test_the_first_reports_taken_cover_every_task() -> None:
    rows = [{"task": t, "id": f"{t}{i}"} for t, n in (("a", 3), ("b", 1), ("c", 2)) for i in range(n)]
    assert [r["id"] for r in proposer_prompt.interleaved(rows)] == ["a0", "b0", "c0", "a1", "c1", "a2"]
