"""`harness-learn adapt`, `resume` and `eval`: run, continue and judge an adaptation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from harness_learning.graphs.cli import app
from harness_learning.graphs.cli._common import (
    console,
    out,
    print_json_last,
    race_rule,
    run_async,
    task_options,
    user_errors,
)


def check_inputs(config) -> None:
    """Open the run's task and tools now, so a missing file or a failing import is one clear
    line before any work starts."""
    from harness_learning.graphs.adapter.inputs import open_task, open_tools

    open_task(config)
    open_tools(config)


@app.command()
def adapt(
    task: Annotated[str, typer.Option(help="Task: rg:<dataset>, hotpotqa, musique, 2wiki; a data file of your own (.jsonl, .json, .csv or a saved `datasets` dir); module:Class; or a registered name.")],
    run_dir: Annotated[Path, typer.Option(help="Run directory (log, versions, checkpoints).")],
    harness: Annotated[str | None, typer.Option(help="Start harness: a seed name or a .py file (the task's seed if unset).")] = None,
    metric: Annotated[str | None, typer.Option(help="Data-file metric: exact, f1, contains, numeric[:REL_TOL], regex, json, module:function, judge:MODEL.")] = None,
    describe: Annotated[str | None, typer.Option(help="The Proposer's task description: TEXT or @file (derived from the data if unset).")] = None,
    tools: Annotated[list[str] | None, typer.Option("--tools", help="Your tool(s), module:attr or file.py:attr (repeatable): a LangChain tool, a list, a typed function or a factory.")] = None,
    index_backend: Annotated[str | None, typer.Option(help="QA index backend: auto, bm25, chroma, hybrid.")] = None,
    aliases: Annotated[Path | None, typer.Option(help="2Wiki's id_aliases.json.")] = None,
    solver: Annotated[str, typer.Option(help="Solver model ('local' or litellm string).")] = "local",
    proposer: Annotated[str, typer.Option(help="Proposer model.")] = "local",
    rounds: Annotated[int | None, typer.Option(help="Rounds (track default if unset).")] = None,
    candidates: Annotated[int | None, typer.Option(help="Candidates per round.")] = None,
    group_size: Annotated[int | None, typer.Option(help="Proposer samples per round for training data: the first --candidates compete for adoption, the rest are judged and logged only (a GRPO group of this size whatever the policy).")] = None,
    proposer_logprobs: Annotated[bool, typer.Option(help="Log the Proposer's sampled tokens' log-probs (llama.cpp, vLLM) for offline GRPO; off for endpoints that reject `logprobs`.")] = True,
    policy: Annotated[str | None, typer.Option(help="strict, best_valid or racing.")] = None,
    edit_format: Annotated[str | None, typer.Option(help="search_replace or whole_program.")] = None,
    feedback: Annotated[int | None, typer.Option(help="Feedback problems per round.")] = None,
    selection: Annotated[int | None, typer.Option(help="Selection problems per round.")] = None,
    test: Annotated[int | None, typer.Option(help="Held-out test problems (task's default).")] = None,
    dev: Annotated[int | None, typer.Option(help="Dev pool size (task's default).")] = None,
    data: Annotated[Path | None, typer.Option(help="QA dataset file.")] = None,
    index: Annotated[Path | None, typer.Option(help="QA retrieval index directory.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of sampling and Proposer samples.")] = 0,
    patience: Annotated[int | None, typer.Option(help="Stop after K rounds without gain.")] = None,
    max_solver_calls: Annotated[int | None, typer.Option(help="Budget: Solver calls.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Budget: tokens (Solver+Proposer).")] = None,
    concurrency: Annotated[int, typer.Option(help="Problems in flight per evaluation.")] = 8,
    proposer_max_tokens: Annotated[int, typer.Option(help="Proposer completion limit.")] = 2048,
    approval: Annotated[bool, typer.Option(help="Ask before adopting a candidate.")] = False,
    race: Annotated[str, typer.Option(help="Policy racing's rule as JSON, e.g. '{\"fractions\": [0.3125, 0.75, 1], \"keep\": [0.5, 0.75]}' (see `bench racing --curve`).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
) -> None:
    """Adapt a harness to TASK: evaluate, report, propose, validate, select, repeat."""
    from harness_learning.graphs.adapter.config import AdaptConfig, Budget
    from harness_learning.graphs.adapter.run import prepare
    from harness_learning.graphs.cli.models_cmd import require_local_models
    from harness_learning.harnesses.llm.models import resolve_role

    require_local_models(solver, resolve_role(proposer, "proposer"))
    with user_errors():
        config = prepare(AdaptConfig(
            task=task, run_dir=str(run_dir), solver=solver, proposer=proposer,
            seed_harness=harness, metric=metric, describe=describe, tools=list(tools or []),
            index_backend=index_backend, aliases=str(aliases) if aliases else None,
            task_options=task_options(data, index, n_dev=dev, n_test=test, seed=None),
            proposer_params={"temperature": 0.7, "max_tokens": proposer_max_tokens},
            rounds=rounds, candidates=candidates, group_size=group_size,
            proposer_logprobs=proposer_logprobs, policy=policy, edit_format=edit_format,
            feedback=feedback, selection=selection, seed=seed, patience=patience,
            budget=Budget(solver_calls=max_solver_calls, tokens=max_tokens),
            concurrency=concurrency, approval=approval, race=race_rule(race)))
    _run(config, resume=False, as_json=as_json)


@app.command()
def resume(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
) -> None:
    """Continue a run that was stopped or killed; nothing finished is redone."""
    from harness_learning.graphs.adapter.run import load_config

    with user_errors():
        config = load_config(run_dir)
    _run(config, resume=True, as_json=as_json)


def _run(config, *, resume: bool, as_json: bool) -> dict:
    """Check the inputs, run with the live view; returns the final state."""
    from harness_learning.graphs.cli.steer_cmd import drive

    with user_errors():
        check_inputs(config)
    return drive(config, resume=resume, as_json=as_json)


@app.command("eval")
def eval_run(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    split: Annotated[str, typer.Option(help="Only `test` is meaningful: held-out problems.")] = "test",
    n: Annotated[int, typer.Option(help="Test problems (0 = all).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
) -> None:
    """Evaluate the seed and each round's selected version on held-out test problems."""
    from harness_learning.graphs.adapter.final_eval import final_evaluation
    from harness_learning.graphs.adapter.nodes import InfraStop
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.graphs.cli.errors import unreachable

    if split != "test":
        raise typer.BadParameter("the final evaluation is on the held-out test split")
    with user_errors():
        check_inputs(load_config(run_dir))
    try:
        summary = run_async(final_evaluation(run_dir, n=n, console=console))
    except InfraStop as exc:  # name the endpoint that failed
        raise unreachable(load_config(run_dir).solver, "solver", str(exc), "--solver") from exc
    out.print(summary.table())
    out.print(f"plot: {summary.plot_path}\ndiffs: {summary.diffs_path}")
    if as_json:
        print_json_last(summary.to_json())
