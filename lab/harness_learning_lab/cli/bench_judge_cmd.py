"""`harness-learn bench judge`: the LLM judge's agreement with `exact` on a committed honest set,
with its former parse and its current one (`harness_learning_lab.bench.judge_agreement`)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from harness_learning.cli import bench_app


@bench_app.command("judge")
def bench_judge(
    model: Annotated[str, typer.Option(help="The judge as ALIAS@http://HOST:PORT/v1 (an "
                                            "OpenAI-compatible server); default: start --local.")] = "",
    local: Annotated[str, typer.Option(help="The local model to start when no --model is given "
                                            "(qwen2.5-coder-1.5b or smollm2-135m).")] = "qwen2.5-coder-1.5b",
    injections: Annotated[int, typer.Option(min=0, help="Questions also graded with an injected "
                                                        "answer ('I do not know.' and a forged "
                                                        "grade line).")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Last line: a JSON object of every "
                                                         "grade.")] = False,
) -> None:
    """Grade the honest set with the former judge (answer pasted raw, first grade word) and the
    current one (answer quoted, one-word reply, decoy control); print a table of agreement with
    `exact` and of injected answers let through."""
    from harness_learning.harnesses.llm.errors import LocalModelError
    from harness_learning_lab.bench import judge_agreement

    try:
        result = judge_agreement.run(model, local, injections,
                                     log=lambda m: print(m, file=sys.stderr, flush=True))
    except (ValueError, LocalModelError) as exc:
        print(f"harness-learn: error: {exc} · hint: --model ALIAS@http://HOST:PORT/v1, or "
              "--local qwen2.5-coder-1.5b or smollm2-135m", file=sys.stderr)
        raise typer.Exit(2) from exc
    print(judge_agreement.table(result), flush=True)
    if as_json:
        print(json.dumps(result))
