"""Fixtures for training tests: SmolLM2's tokenizer saved once per session, a tiny random Llama
with it, and a run directory whose execution log holds groups of proposals."""

from __future__ import annotations

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One intra-op thread: on a shared 2-core machine more threads spin against each other
    (a tiny model's step is ~10x slower with 2 threads under load)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """SmolLM2's tokenizer read from the bundled GGUF once, saved as a plain tokenizer dir."""
    from harness_learning.training.loading import load_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    load_tokenizer("smollm2").save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_dir(tokenizer_dir, tmp_path_factory):
    """A tiny random Llama checkpoint (hidden 32, 2 layers) with SmolLM2's tokenizer."""
    from transformers import AutoTokenizer

    from harness_learning.training.loading import tiny_llama

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    out = tmp_path_factory.mktemp("tiny")
    tiny_llama(tok, seed=0).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


EDITS = [
    # applies and completes: a better answer extraction
    ('        answer = reply.rsplit("Answer:", 1)[-1].strip() if "Answer:" in reply else '
     'reply.strip()',
     '        answer = reply.rsplit("Answer:", 1)[-1].strip().rstrip(".") if "Answer:" in reply '
     'else reply.strip()'),
    # applies: a different instruction
    ('PROMPT = """Solve the problem. Think briefly, then give the final answer on the last line',
     'PROMPT = """Solve the problem step by step, then give the final answer on the last line'),
    # parses but does not apply (SEARCH text absent)
    ("    return graph.compile()", "    return graph"),
]


def _block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def write_store_run(run_dir, rounds: int = 3):
    """A run directory written through the store's API with reasoning-track proposals: each
    completion is parsed and applied for real (harnesses.edits) and rewarded by evals.rewards;
    selection scores vary by round so every group has a reward spread."""
    from harness_learning.evals.rewards import RewardInputs, reasoning_reward
    from harness_learning.harnesses.edits import parse_and_apply
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.store import Outcome, Proposal, SQLiteLogStore, prompt_group_id

    source = seed_source("reasoning_direct")
    store = SQLiteLogStore(run_dir)
    store.init_run({"task": "rg:basic_arithmetic", "edit_format": "search_replace"})
    seed_sha = store.put_version(source, None, 0, "seed")
    completions = [_block(*EDITS[0]), _block(*EDITS[1]), _block(*EDITS[2]), "I would not change it."]
    for r in range(1, rounds + 1):
        messages = [{"role": "system", "content": "You improve harness programs."},
                    {"role": "user", "content": f"Task: rg:basic_arithmetic (round {r}).\n\n{source}\n\n"
                     f"Report: 2 of 5 wrong."}]
        for i, text in enumerate(completions + completions[:1]):  # one duplicate per group
            edit = parse_and_apply(source, text, "search_replace", "stop")
            score = [0.6, 0.4, 0.0, 0.0][i % 4] * r / rounds
            sha = (store.put_version(edit.new_source, seed_sha, r)
                   if edit.applied else None)
            reward, parts = reasoning_reward(RewardInputs(
                selection_score=score if edit.applied else 0.0, parsed=edit.parsed,
                applied=edit.applied, completed_fraction=1.0 if edit.applied else 0.0))
            store.put_proposal(Proposal(
                id=f"r{r}-{i}", round=r, group_id=prompt_group_id(messages), prompt=messages,
                completion=text, finish_reason="stop", model="smollm2",
                edit_format="search_replace", candidate_sha=sha, parent_sha=seed_sha,
                parent_score=0.2, outcome=Outcome(
                    parsed=edit.parsed, applied=edit.applied, valid=edit.applied,
                    completed_fraction=1.0 if edit.applied else 0.0,
                    selection_score=score if edit.applied else None, reward=reward,
                    reward_parts=parts)))
    store.close()
    return seed_sha


@pytest.fixture(scope="session")
def completions():
    """Three Proposer answers to the reasoning seed: an edit that applies, one that parses but
    does not apply, and no edit."""
    return [_block(*EDITS[1]), _block(*EDITS[2]), "I would not change it."]


ADAPTER_EDITS = [
    "The harness looks fine to me.",                                  # does not parse
    _block("    this line is not in the source", "    pass"),         # does not apply
    _block('        return {"answer": answer}',
           '        tools.llm("think again")\n        return {"answer": "nothing"}'),  # worse
    _block('PROMPT = """Solve the problem. Think briefly, then give the final answer on the '
           'last line',
           'PROMPT = """Solve the problem CAREFULLY. Think briefly, then give the final answer '
           'on the last line'),                                       # better
]


def write_adapter_run(run_dir, rounds: int = 2):
    """A real adapter run (real sandbox workers, store, rewards) with scripted Solver and
    Proposer: each round's group holds an unparseable, a non-applying, a worse and a better
    edit."""
    import asyncio

    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.graphs.adapter.run import run_adaptation

    def proposer(prompt, params):
        return ADAPTER_EDITS[params["seed"] % 1009 % len(ADAPTER_EDITS)]

    config = AdaptConfig(task="sums", run_dir=str(run_dir), rounds=rounds,
                         candidates=len(ADAPTER_EDITS), policy="best_valid",
                         edit_format="search_replace", feedback=3, selection=6,
                         concurrency=4).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(6), solver=ScriptedModel(solver_rule),
                                     proposer=ScriptedModel(proposer))
    asyncio.run(run_adaptation(config, context=ctx))
    return run_dir


@pytest.fixture(scope="session")
def logged_run(tmp_path_factory):
    """Execution log of a real short adapter run."""
    return write_adapter_run(tmp_path_factory.mktemp("adapter-run"))
