"""An endpoint that refuses log-prob parameters does not fail the run: llama-cpp-python's
server without every position's logits (how it serves by default, and how this project serves
its local models) answers HTTP 500 'logprobs is not supported ...'. The adapter asks a remote
endpoint for log-probs (for offline GRPO's ratio), so a user's own llama.cpp server as the
Proposer met that on every call. Now the run asks again without them, logs why once, and never
asks again. The real local SmolLM2 server, reached as a remote endpoint by its URL."""

from __future__ import annotations

from harness_learning.graphs.adapter.api import adapt
from harness_learning.harnesses.store import SQLiteLogStore


def test_a_proposer_endpoint_refusing_log_probs_is_asked_without_them(local_model_url, tmp_path):
    run_dir = tmp_path / "run"
    adapt(task="rg:basic_arithmetic", run_dir=run_dir, rounds=1, candidates=2,
          solver="local:smollm2-135m", proposer=f"openai/smollm2@{local_model_url}",
          task_options={"n_dev": 4, "n_test": 1}, feedback=1, selection=1, concurrency=2,
          proposer_params={"temperature": 0.7, "max_tokens": 32})
    with SQLiteLogStore(run_dir) as store:
        proposals = list(store.iter_proposals())
        refused = [e.payload for e in store.iter_events(kinds=["proposer_logprobs_refused"])]
    assert sorted(p.id for p in proposals) == ["r1-c0", "r1-c1"]
    assert all(p.completion.strip() and not p.logprobs for p in proposals)
    assert len(refused) == 1 and "logprobs is not supported" in refused[0]["error"]
