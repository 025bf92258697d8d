"""The local-models benchmark's prompt and table (its figures come from `bench local-models`)."""

from __future__ import annotations

from harness_learning.graphs.adapter.proposer import DATA_NOTE
from harness_learning_lab.bench.local_models import proposer_prompt, table


def test_the_benchmark_prompt_is_a_real_proposer_prompt_of_demo_size() -> None:
    system, user = proposer_prompt(2500)
    assert system["role"] == "system" and "def build_graph(tools)" in user["content"]
    assert "<<<<<<< SEARCH" in user["content"]
    report = user["content"].split("## Report on feedback problems\n")[1].split("\n\n## ")[0]
    assert report.startswith(DATA_NOTE) and len(report.removeprefix(DATA_NOTE + "\n")) == 2500


def test_table_shows_each_candidates_first_token_time_and_the_round_total() -> None:
    rows = [{"proposer_threads": 1, "mode": "own", "prompt_eval_round_s": 41.5,
             "tokens_per_s": 10.25, "candidates": [{"first_token_s": 40.0},
                                                   {"first_token_s": 0.5},
                                                   {"first_token_s": 1.0}]}]
    lines = table(rows).splitlines()
    assert "40.0, 0.5, 1.0" in lines[2] and "41.5 s" in lines[2] and "10.2" in lines[2]
