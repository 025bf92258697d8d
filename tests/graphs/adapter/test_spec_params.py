"""A model spec's parameters (`--solver 'openai/x@URL?temperature=0.3'`) are what the user
wrote for that model, so they win over the run's defaults for the role (`solver_params`,
`proposer_params`), and a harness's own call parameters win over both. Before, the run's
defaults were sent with every call and silently replaced the spec's (`demo`'s Proposer could
not be capped by `?max_tokens=`). Control flow with scripted models; the real SmolLM2 server
stops where the spec's `max_tokens` says, for the Solver and for the Proposer."""

from __future__ import annotations

import asyncio

from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.graphs.adapter.api import adapt
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.llm import ModelClient, ModelConfig
from harness_learning.harnesses.store import SQLiteLogStore
from harness_learning.harnesses.toolbox import Toolbox

SPEC = "openai/scripted@http://127.0.0.1:9/v1?max_tokens=64&temperature=0.2"


def _scripted(seen: list[dict], reply: str = "I would keep the program as it is.") -> ScriptedModel:
    def rule(prompt: str, params: dict) -> str:
        seen.append(dict(params))
        return reply

    model = ScriptedModel(rule)
    model.config = ModelConfig.parse(SPEC)  # as a client of that spec holds it
    return model


def test_the_proposer_specs_parameters_win_over_proposer_params(tmp_path) -> None:
    seen: list[dict] = []
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), rounds=1, candidates=2,
                         edit_format="search_replace", feedback=2, selection=2, repair_turns=0,
                         proposer_params={"temperature": 0.9, "max_tokens": 2048, "top_p": 0.5}
                         ).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(6), solver=ScriptedModel(solver_rule),
                                     proposer=_scripted(seen))
    asyncio.run(run_adaptation(config, context=ctx))
    assert len(seen) == 2
    assert all(p["max_tokens"] == 64 and p["temperature"] == 0.2 for p in seen)
    assert all(p["top_p"] == 0.5 for p in seen)  # a default the spec does not name is kept
    assert len({p["seed"] for p in seen}) == 2  # each sample still has its own seed


def test_the_solver_specs_parameters_win_over_solver_params_and_the_harness_wins_over_both() -> None:
    seen: list[dict] = []
    toolbox = Toolbox(solver=_scripted(seen, "4"),
                      solver_params={"temperature": 0.0, "max_tokens": 256, "top_p": 0.9})
    asyncio.run(toolbox.llm("2+2?", {}))
    asyncio.run(toolbox.llm("2+2?", {"max_tokens": 5}))
    assert [p["max_tokens"] for p in seen] == [64, 5]
    assert all(p["temperature"] == 0.2 and p["top_p"] == 0.9 for p in seen)


def test_a_scripted_solver_without_a_spec_keeps_the_run_defaults() -> None:
    seen: list[dict] = []

    def rule(prompt: str, params: dict) -> str:
        seen.append(dict(params))
        return "4"

    toolbox = Toolbox(solver=ScriptedModel(rule), solver_params={"max_tokens": 256})
    asyncio.run(toolbox.llm("2+2?", {}))
    assert seen == [{"max_tokens": 256}]


def test_the_real_server_stops_where_the_spec_says(local_model_url, tmp_path) -> None:
    solver = ModelClient(ModelConfig.parse(f"openai/smollm2@{local_model_url}?max_tokens=3"))
    toolbox = Toolbox(solver=solver, solver_params={"temperature": 0.0, "max_tokens": 256})
    reply = asyncio.run(toolbox.llm("Write a long story about a cat.", {}))
    assert 0 < reply.meta["completion_tokens"] <= 3

    run_dir = tmp_path / "run"
    adapt(task="rg:basic_arithmetic", run_dir=run_dir, rounds=1, candidates=1,
          solver="local:smollm2-135m",
          proposer=f"openai/smollm2@{local_model_url}?max_tokens=8&temperature=0",
          task_options={"n_dev": 4, "n_test": 1}, feedback=1, selection=1, concurrency=2,
          proposer_params={"temperature": 0.7, "max_tokens": 256}, proposer_logprobs=False)
    with SQLiteLogStore(run_dir) as store:
        proposals = list(store.iter_proposals())
    assert proposals and all(0 < p.completion_tokens <= 8 for p in proposals)


def test_a_local_models_built_in_defaults_lose_to_the_runs() -> None:
    """`local` answers greedily and briefly by default, but those defaults are not the user's:
    a run's `solver_params` (a Solver sampled at 0.7, capped at 24) still win over them."""
    seen: list[dict] = []

    def rule(prompt: str, params: dict) -> str:
        seen.append(dict(params))
        return "4"

    model = ScriptedModel(rule)
    model.config = ModelConfig.parse("local:smollm2-135m")
    toolbox = Toolbox(solver=model, solver_params={"temperature": 0.7, "max_tokens": 24})
    asyncio.run(toolbox.llm("2+2?", {}))
    assert seen == [{"temperature": 0.7, "max_tokens": 24}]
