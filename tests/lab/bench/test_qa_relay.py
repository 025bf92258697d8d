"""`bench qa-relay`: the relay and single-step arms spend the same number of candidates (one
round of N Proposer edits and N operator candidates against N rounds of one of each), select
on token F1 under the held-out split, and read EM and F1 from the runs' logs; the smoke runs
end to end with the real SmolLM2 and writes the table; bad input is one line and exit 2."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness_learning.cli.main import main
from harness_learning.harnesses.llm.simserver import SimServer
from harness_learning_lab.bench import qa_relay


def test_both_arms_spend_the_same_candidates_and_select_on_f1(tmp_path) -> None:
    settings = qa_relay.load_settings()
    planned = qa_relay.plans(settings, tmp_path, lambda task: {"score_by": settings["score_by"]})
    assert [(p.method, p.task) for p in planned][:3] == [
        ("seed", settings["tasks"][0]), ("single_step", settings["tasks"][0]),
        ("relay", settings["tasks"][0])]
    n = settings["rounds"]
    by = {p.method: p.config for p in planned if p.task == settings["tasks"][0]}
    single, relay = by["single_step"], by["relay"]
    assert (single.rounds, single.candidates, single.operators_per_round) == (1, n, n)
    assert (relay.rounds, relay.candidates, relay.operators_per_round) == (n, 1, 1)
    assert n >= 4 and settings["selection"] == 16 and settings["n_test"] == 48
    for config in (single, relay):
        assert (config.policy, config.split, config.task_options["score_by"]) == (
            "best_valid", "held_out", "f1")
        assert config.operators.startswith("passages")
    assert by["seed"].rounds == 0 and planned[0].eval_only


def test_the_interval_is_paired_and_round_one_share_reads_the_chain() -> None:
    gain = qa_relay.interval([0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0])
    assert gain[0] == 0.5 and gain[1] <= 0.5 <= gain[2]
    relay = {"rounds": [{"round": 0, "f1_mean": 0.2}, {"round": 1, "f1_mean": 0.3},
                        {"round": 2, "f1_mean": 0.4}]}
    assert qa_relay.round1_share(relay, {"f1": [0.2, 0.2]}) == 0.5
    assert qa_relay.round1_share(relay, {"f1": [0.5, 0.5]}) is None  # no gain to share
    assert qa_relay.round1_share(relay, {"f1": [0.2, 0.2]}, [0.2, 0.05, 0.35]) == 0.5
    assert qa_relay.round1_share(relay, {"f1": [0.2, 0.2]}, [0.2, -0.05, 0.45]) is None


def test_a_stack_needs_both_blocks_only_when_the_later_gain_is_above_zero() -> None:
    def row(f1_gain: list[float] | None) -> dict:
        return {"stacked": f1_gain is not None,
                "stack_gain": {"em": [0.0, 0.0, 0.0], "f1": f1_gain} if f1_gain else None}

    assert qa_relay._stacked(row(None)) == "no"
    assert qa_relay._stacked(row([0.2, 0.05, 0.35])).endswith("(needs both)")
    assert qa_relay._stacked(row([0.05, -0.02, 0.12])).endswith("(the first alone is as good)")


def tiny(models: str, rounds: int = 2, n_test: int = 2) -> str:
    """Settings of a few seconds: one task, one question to select on, two to test."""
    return f"""
tasks = ["2wiki"]
seed = 0
rounds = {rounds}
operators = "passages,extra_hop"
edit_format = "function"
repair_turns = 0
feedback = 1
selection = 1
n_dev = 3
n_test = {n_test}
score_by = "f1"
solver = "{models}"
proposer = "{models}"
solver_max_tokens = 16
proposer_max_tokens = 16
concurrency = 2
"""


def test_every_arm_runs_the_table_is_written_and_a_rerun_reads_the_logs(tmp_path, capsys):
    """Control flow on the simulated endpoint (every reply `Answer: yes`: the Proposer's edits
    are invalid, the operators' candidates are judged and adopted by best_valid)."""
    config, out = tmp_path / "relay.toml", tmp_path / "out"
    with SimServer(latency_s=0.0, rules=[(r"[\s\S]", "Answer: yes")]) as url:
        config.write_text(tiny(f"openai/sim@{url}"))
        args = ["bench", "qa-relay", "--config", str(config), "--out", str(out), "--json"]
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code == 0
        figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])[0]
        with pytest.raises(SystemExit):
            main(args)  # every run finished: read back, nothing run again
    assert "done already" in capsys.readouterr().err
    assert figures["task"] == "2wiki" and figures["n"] == 2
    assert set(figures["arms"]) == set(qa_relay.ARMS)
    relay = figures["arms"]["relay"]
    assert [r["round"] for r in relay["rounds"]] == [0, 1, 2]  # the chain from the seed
    assert relay["origins"] == ["operator:passages", "operator:extra_hop"] and relay["stacked"]
    assert set(relay["stack_gain"]) == {"em", "f1"}  # the final against the passages version
    assert all(len(g) == 3 and g[1] <= g[0] <= g[2] for g in relay["stack_gain"].values())
    assert figures["arms"]["single_step"]["stack_gain"] is None
    assert figures["arms"]["single_step"]["origins"] == ["operator:passages"]
    assert all(0.0 <= row["f1_mean"] <= 1.0 for row in figures["arms"].values())
    assert set(figures["relay_vs_single"]) == {"em", "f1"}
    written = (out / "qa_relay.md").read_text()
    assert "| 2wiki | relay |" in written and "over the chain at its first block" in written
    assert json.loads((out / "runs" / "2wiki" / "relay" / "config.json").read_text())[
        "task_options"]["score_by"] == "f1"


@pytest.mark.slow
def test_the_real_models_answers_are_read_back_as_em_and_f1(tmp_path, local_model_url):
    """The seed arm with the real SmolLM2: its stored answers give the task's own EM and F1."""
    from harness_learning.evals.registry import get_task

    config = tmp_path / "relay.toml"
    config.write_text(tiny("local:smollm2-135m", n_test=1))
    settings = qa_relay.load_settings(config)
    out = tmp_path / "out"
    options = qa_relay.task_options(settings, out, "2wiki")
    seed_plan = qa_relay.plans(settings, out, lambda _task: options)[0]
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning_lab.experiments.runner import execute

    asyncio.run(execute(seed_plan, {}, AdapterContext, lambda _m: None))
    figures = qa_relay.figures(settings, out, "2wiki", options)
    task = get_task("2wiki", **options)
    read = qa_relay.read_arm(out / "runs" / "2wiki" / "seed", task, task.test())
    assert list(figures["arms"]) == ["seed"] and len(read["f1"]) == 1
    assert figures["arms"]["seed"]["f1_mean"] == round(read["f1"][0], 3)
    assert all(0.0 <= f <= 1.0 for f in read["f1"]) and all(e in (0.0, 1.0) for e in read["em"])


@pytest.mark.parametrize(("flags", "says"), [
    (["--task", "gsm8k"], "are not QA tasks"),
    (["--config", "nowhere.toml"], "nowhere.toml"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, flags, says) -> None:
    monkeypatch.chdir(Path(__file__).parents[3])
    with pytest.raises(SystemExit) as exited:
        main(["bench", "qa-relay", "--smoke", "--out", str(tmp_path / "o"), *flags])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    assert says in lines[0] and " · hint: " in lines[0], lines[0]
    assert not (tmp_path / "o").exists()
