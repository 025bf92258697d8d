"""Online GRPO: one TRL step whose rewards come from sandboxed evaluations of sampled edits."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from harness_learning.training.config import GRPOOnlineConfig
from harness_learning.training.grpo_online import logged_prompts


def test_logged_prompts_recover_each_groups_harness(logged_run):
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.store import SQLiteLogStore

    prompts = logged_prompts([logged_run])
    assert prompts.task == "sums"
    with SQLiteLogStore(logged_run) as store:
        groups = list(store.iter_proposal_groups())
        sources = {v.source for v in store.iter_versions()}
    assert len(prompts.rows) == len(groups) == 2
    assert prompts.rows[0]["source"] == seed_source("reasoning_direct")
    assert prompts.rows[1]["source"] != prompts.rows[0]["source"]  # round 2 shows the adopted
    assert all(r["source"] in sources for r in prompts.rows)
    assert all(r["edit_format"] == "search_replace" for r in prompts.rows)


@pytest.fixture
def short_run(tmp_path, completions):
    """A run whose one group answered a short prompt with three different completions (an edit
    that applies, one that parses but does not apply, none), so a tiny model learns them fast."""
    from harness_learning.evals.rewards import proposal_reward
    from harness_learning.harnesses.edits import parse_and_apply
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.store import Outcome, Proposal, SQLiteLogStore, prompt_group_id

    source = seed_source("reasoning_direct")
    prompt = [{"role": "user", "content": "Improve the harness for rg:basic_arithmetic."}]
    with SQLiteLogStore(tmp_path / "short") as store:
        store.init_run({"task": "rg:basic_arithmetic", "task_options": {"n_dev": 4, "n_test": 1}})
        seed = store.put_version(source, None, 0, "seed")
        for i, text in enumerate(completions):
            edit = parse_and_apply(source, text, "search_replace", "stop")
            reward, parts = proposal_reward(
                track="reasoning", parsed=edit.parsed, applied=edit.applied, valid=edit.applied,
                completed_fraction=1.0, score=0.0, source=edit.new_source)
            store.put_proposal(Proposal(
                id=f"p{i}", round=1, group_id=prompt_group_id(prompt), prompt=prompt,
                completion=text, finish_reason="stop", edit_format="search_replace",
                parent_sha=seed, outcome=Outcome(
                    parsed=edit.parsed, applied=edit.applied, valid=edit.applied, reward=reward,
                    reward_parts=parts)))
    return tmp_path / "short"


def _warm_on_group(tiny_dir, run, out, steps=120):
    """A tiny Llama taught, by NLL steps on the logged group, to answer with its edits: its
    samples then differ (an edit that applies and is evaluated / one that does not apply)."""
    from transformers import AutoTokenizer

    from harness_learning.training.data import grpo_dataset
    from harness_learning.training.grpo_offline import completion_logprobs, encode
    from harness_learning.training.loading import load_model, save_checkpoint

    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    ds, _ = grpo_dataset([run], GRPOOnlineConfig())
    # the two edits share "<<<<<<< SEARCH" and part at the SEARCH line: once learnt, samples
    # are either the edit that applies or the one that does not, about half and half
    edits = [row for row in ds if row["completion"].startswith("<<<<<<<")]
    best = max(edits, key=lambda row: row["reward"])  # the edit that applies, weighed 2:1
    items = [encode(tok, row, 1024) for row in [*edits, best]]
    torch.manual_seed(0)
    model = load_model(str(tiny_dir))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(steps):  # every completion in every step: a balanced mixture
        loss = -sum(completion_logprobs(model, e, "cpu").mean() for e in items)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return save_checkpoint(model, tok, out)


@pytest.mark.slow
def test_one_online_step_rewards_from_sandboxed_evaluations(short_run, tiny_dir, tmp_path,
                                                            local_model_url):
    from harness_learning.evals.judge import ZEROED
    from harness_learning.evals.rewards import proposal_reward
    from harness_learning.harnesses.store import SQLiteLogStore
    from harness_learning.training.grpo_online import train_grpo_online

    warm = _warm_on_group(tiny_dir, short_run, tmp_path / "warm")
    cfg = GRPOOnlineConfig(
        model=str(warm), out=str(tmp_path / "online"), max_steps=1, num_generations=8,
        batch_size=8, max_completion_length=64, max_length=1024, num_problems=2,
        concurrency=2, lora=False, learning_rate=1e-2, temperature=1.0, seed=3,
    )
    result = train_grpo_online([short_run], cfg, progress=False)
    with SQLiteLogStore(tmp_path / "online" / "log") as store:
        logged = list(store.iter_proposals())
        sources = {v.sha: v.source for v in store.iter_versions()}
    assert len(logged) == 8
    # What the 8 samples are is up to sampling (on another machine's float rounding, all 8 can
    # be the same kind): assert what holds for any sample. Each reward is the one its own
    # judged outcome earns, and whatever applied and passed the check ran in the sandbox.
    for p in logged:
        source = sources[p.candidate_sha] if p.candidate_sha else None
        expected, _ = proposal_reward(
            track="reasoning", parsed=p.parsed, applied=p.applied, valid=p.valid,
            completed_fraction=p.completed_fraction or 0.0, score=p.selection_score or 0.0,
            source=source)
        if (p.invalid_reason or "").split(":", 1)[0] in ZEROED:
            expected = 0.0
        assert p.reward == expected, p
        if p.applied:  # either refused with a reason, or run in the sandbox
            assert p.invalid_reason or (source is not None and p.completed_fraction is not None), p
    # the prompt's harness itself was evaluated in the sandbox with the real local Solver
    assert all(p.parent_score is not None for p in logged)
    rows = [json.loads(line) for line in result.metrics.read_text().splitlines()]
    assert rows and all(math.isfinite(r.get("loss", 0.0)) for r in rows)
    rewards = [p.reward for p in logged]
    if max(rewards) > min(rewards):  # a spread gives non-zero advantages: the step moves weights
        before = load_file(str(warm / "model.safetensors"))
        after = load_file(str(result.checkpoint / "model.safetensors"))
        assert any(not torch.equal(before[k], after[k]) for k in before)


def test_a_group_can_train_in_micro_batches(tmp_path):
    from harness_learning.training.grpo_online import grpo_args

    args = grpo_args(GRPOOnlineConfig(num_generations=8, batch_size=8, micro_batch_size=2),
                     tmp_path, progress=False)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (2, 4)
    assert args.generation_batch_size == 8  # still one whole group per optimizer step
    whole = grpo_args(GRPOOnlineConfig(num_generations=8, batch_size=8), tmp_path, False)
    assert (whole.per_device_train_batch_size, whole.gradient_accumulation_steps) == (8, 1)
    with pytest.raises(ValueError, match="multiple of micro_batch_size 3"):
        grpo_args(GRPOOnlineConfig(num_generations=8, batch_size=8, micro_batch_size=3),
                  tmp_path, False)


@pytest.mark.slow
def test_bench_grpo_step_times_both_paths_on_one_group(short_run, tiny_dir, local_model_url):
    from typer.testing import CliRunner

    from harness_learning.cli import app
    from harness_learning_lab.bench.grpo_step import PHASES

    result = CliRunner().invoke(app, ["bench", "grpo-step", str(short_run), "--model",
                                      str(tiny_dir), "--group", "4", "--completion", "16",
                                      "--problems", "1", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert set(figures["paths"]) == {"trl", "shared"} and figures["speedup"] > 0
    for row in figures["paths"].values():
        assert all(row[p] >= 0 for p in PHASES) and row["step"] > 0
        assert row["generate"] > 0 and row["reward"] > 0 and row["loss_forward"] > 0
        # the phases are parts of the step (each rounded to the millisecond)
        assert row["generate"] + row["reward"] + row["loss_forward"] <= row["step"] + 0.003
    assert "| shared |" in result.output and "| trl |" in result.output


def test_bench_grpo_step_refuses_a_directory_without_a_log(tmp_path, capsys):
    from harness_learning.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["bench", "grpo-step", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "no execution log in" in err and "· hint:" in err
