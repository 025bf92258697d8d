"""`harness-learn run`: evaluate one harness on a task's problems."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import app
from harness_learning.cli._common import (
    SANDBOX_HELP,
    choose_sandbox,
    out,
    print_json_last,
    progress,
    read_harness,
    results_table,
    run_async,
    task_options,
    user_errors,
)
from harness_learning.cli.exit_checks import check_evaluation, score_line
from harness_learning.cli.show_cmd import StoreOption
from harness_learning.harnesses.text_safety import for_terminal


@app.command()
def run(
    task: Annotated[str, typer.Option(help="Task: rg:<dataset>, hotpotqa, musique, 2wiki, a data file of your own, module:Class or a registered name.")],
    harness: Annotated[str, typer.Option(help="Harness: a seed name, a .py file, or a run directory (its current version).")] = "",
    split: Annotated[str, typer.Option(help="feedback (the dev pool) or test.")] = "feedback",
    n: Annotated[int, typer.Option(help="Number of problems (0 = all of the split).")] = 10,
    model: Annotated[str, typer.Option(help="Solver model: 'local' or a litellm model string.")] = "local",
    data: Annotated[Path | None, typer.Option(help="QA dataset file.")] = None,
    index: Annotated[Path | None, typer.Option(help="QA retrieval index directory.")] = None,
    index_backend: Annotated[str | None, typer.Option(help="QA index backend: auto, bm25, chroma, hybrid.")] = None,
    aliases: Annotated[Path | None, typer.Option(help="2Wiki's id_aliases.json.")] = None,
    metric: Annotated[str | None, typer.Option(help="Data-file metric (see `adapt --help`).")] = None,
    tools: Annotated[list[str] | None, typer.Option("--tools", help="Your tool(s), module:attr or file.py:attr, or an MCP server's: 'mcp:COMMAND ARGS...' (stdio) or mcp+http://HOST:PORT/PATH (repeatable).")] = None,
    concurrency: Annotated[int, typer.Option(help="Problems in flight.")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
    sandbox: Annotated[str, typer.Option(help=SANDBOX_HELP)] = "",
    store: StoreOption = "",  # given (its callback), a --harness run's PostgreSQL log is read
) -> None:
    """Run a harness on N problems of a task and print per-problem results and the mean."""
    from harness_learning.cli.models_cmd import require_local_models
    from harness_learning.evals.registry import get_task
    from harness_learning.evals.user_failures import UserCodeFailures, check_metric

    if split not in ("feedback", "test"):
        raise typer.BadParameter("split must be feedback or test")
    require_local_models(model)
    from harness_learning.graphs.adapter.inputs import tool_object
    from harness_learning.harnesses.usertools import build_user_tools, check_tools_given

    extra = {"index_backend": index_backend, "aliases": str(aliases) if aliases else None,
             "metric": metric}
    with user_errors():
        the_task = get_task(task, **task_options(data, index),
                            **{k: v for k, v in extra.items() if v is not None})
        user_tools = build_user_tools([tool_object(t) for t in tools], tools) if tools else None
    source = read_harness(harness or the_task.seed)
    with user_errors("give the harness the tools it calls"):  # not a run of silent failures
        check_tools_given(source, user_tools)
    problems = the_task.dev() if split == "feedback" else the_task.test()
    problems = problems[:n] if n else problems
    with user_errors():  # a metric that fails on a gold answer: one line before any run
        check_metric(the_task, problems)
    choose_sandbox(sandbox)
    summary, rows = run_async(_evaluate(the_task, source, problems, model, concurrency,
                                        user_tools))
    out.print(results_table(f"{task} · {split} · {len(rows)} problems", rows,
                            ["id", "question", "answer", "gold", "score", "error"]))
    out.print(score_line(summary))
    for line in UserCodeFailures.from_json(summary).lines():
        out.print(for_terminal(line), style="yellow", markup=False, highlight=False)
    if as_json:
        print_json_last(summary)
    check_evaluation(summary, model)


async def _evaluate(task, source, problems, model, concurrency, user_tools=None):
    from harness_learning.evals.evaluator import evaluate
    from harness_learning.evals.problem import gold_answer
    from harness_learning.evals.user_failures import UserCodeFailures
    from harness_learning.harnesses.llm import get_client
    from harness_learning.harnesses.toolbox import Toolbox

    toolbox = Toolbox(solver=get_client(model), retriever=task.retriever(), user_tools=user_tools)
    with progress("evaluating", len(problems), transient=True) as advance:
        result = await evaluate(source, problems, task, toolbox, concurrency=concurrency,
                                on_result=lambda _r: advance())
    by_id = {p.id: p for p in problems}
    rows = []
    metric_sums: dict[str, float] = {}
    for r in result.results:
        problem = by_id[r.problem_id]
        row = {"id": r.problem_id, "question": problem.question, "answer": r.answer,
               "gold": gold_answer(problem), "score": "-" if r.score is None else f"{r.score:.2f}",
               "error": r.error_kind or ("user tool raised" if UserCodeFailures.of([r]) else "")}
        metrics = getattr(task, "metrics", None)
        if metrics is not None and r.answer is not None:
            for key, value in metrics(problem, r.answer).items():
                metric_sums[key] = metric_sums.get(key, 0.0) + value
        rows.append(row)
    summary = {"mean_score": result.mean_score if result.scored else None,
               "n": len(result.results), "scored": len(result.scored),
               "invalid": sum(r.error_kind == "invalid" for r in result.results),
               "first_error": next((f"{r.error_kind}: {r.error}" for r in result.results
                                    if r.error_kind), None),
               "completed_fraction": result.completed_fraction,
               "infra_errors": result.infra_errors, "tokens": result.tokens,
               **UserCodeFailures.of(result.results).to_json()}
    summary.update({k: v / max(1, len(result.results)) for k, v in metric_sums.items()})
    return summary, rows

