"""LangChain tools over harnesses, for an agent (or any LangChain app) to call.

    from harness_learning.graphs.serving.tools import harness_tools
    tools = harness_tools(model="local")      # run_harness, evaluate_harness, adapt_harness
    llm.bind_tools(tools)                     # any tool-calling chat model

- `run_harness`: answer one question with a harness (a seed, a file, or a run directory's
  current version), sandboxed.
- `evaluate_harness`: score a harness on a task's problems (dev or held-out test split).
- `adapt_harness`: run the adaptation loop for a few rounds and report what changed.

Each tool's arguments are a pydantic model, so agents get a JSON schema. Harness code always
runs in a sandbox worker here; the tools never execute it in the agent's process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, Field

from harness_learning.graphs.serving.embed import (
    HarnessRunError,
    make_toolbox,
    resolve_harness,
    serve,
)
from harness_learning.graphs.serving.mirror import ServedHarness
from harness_learning.graphs.serving.served_harness import HarnessInputError
from harness_learning.harnesses.compiler import HarnessInvalid

R = TypeVar("R")


def _sync(coro: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine from sync code (a tool's `_run` may be called inside a running loop's
    worker thread, never on the loop itself)."""
    return asyncio.run(coro)


USER_ERRORS = (HarnessRunError, HarnessInvalid, HarnessInputError, FileNotFoundError,
               LookupError)
"""What `run_harness` reports to the agent as a tool error (the agent can act on each)."""


class RunHarnessArgs(BaseModel):
    question: str = Field(description="The problem to solve, in words.")
    harness: str = Field("reasoning_direct", description="A seed name (reasoning_direct, "
                         "multihop_two_hop, baseline_tool_loop), a harness .py file, or a run "
                         "directory (its current version).")


class RunHarness(BaseTool):
    """Answer one question with a harness."""

    name: str = "run_harness"
    description: str = ("Answer a question with a harness: a LangGraph program around the Solver "
                        "model. Returns the answer text.")
    args_schema: type[BaseModel] = RunHarnessArgs
    handle_tool_error: bool = True
    model: str | None = None
    task: str | None = None

    def _graph(self, harness: str) -> ServedHarness:
        """The served graph (blocking: it reads the harness and asks its worker for the
        graph's shape; `_arun` calls it in a thread)."""
        return serve(harness, model=self.model, task=self.task, name=self.name)

    def _run(self, question: str, harness: str = "reasoning_direct", **_: object) -> str:
        try:
            return self._graph(harness).invoke({"question": question})["answer"]
        except USER_ERRORS as exc:
            raise ToolException(str(exc)) from exc

    async def _arun(self, question: str, harness: str = "reasoning_direct", **_: object) -> str:
        try:
            graph = await asyncio.to_thread(self._graph, harness)
            return (await graph.ainvoke({"question": question}))["answer"]
        except USER_ERRORS as exc:
            raise ToolException(str(exc)) from exc


class EvaluateHarnessArgs(BaseModel):
    task: str = Field(description="Task name: rg:<reasoning-gym dataset>, hotpotqa, musique or 2wiki.")
    harness: str = Field("", description="Seed name, harness file or run directory; empty: "
                         "the task's seed.")
    n: int = Field(5, ge=1, le=500, description="How many problems to score.")
    split: Literal["dev", "test"] = Field("test", description="dev pool or held-out test problems.")


class EvaluateHarness(BaseTool):
    """Score a harness on a task's problems."""

    name: str = "evaluate_harness"
    description: str = ("Score a harness on N problems of a task. Returns JSON: mean score, "
                        "fraction completed, and per-problem answers.")
    args_schema: type[BaseModel] = EvaluateHarnessArgs
    handle_tool_error: bool = True
    model: str = "local"
    concurrency: int = 4

    def _run(self, task: str, harness: str = "", n: int = 5, split: str = "test",
             **_: object) -> str:
        return _sync(self._arun(task, harness, n, split))

    async def _arun(self, task: str, harness: str = "", n: int = 5, split: str = "test",
                    **_: object) -> str:
        from harness_learning.evals.evaluator import evaluate
        from harness_learning.evals.registry import get_task

        try:
            the_task = get_task(task, n_dev=n, n_test=n) if task.startswith("rg:") \
                else get_task(task)
            found = resolve_harness(harness or the_task.seed)
        except (ValueError, TypeError, FileNotFoundError, LookupError) as exc:
            raise ToolException(str(exc)) from exc
        problems = (the_task.dev() if split == "dev" else the_task.test())[:n]
        toolbox = await asyncio.to_thread(make_toolbox, self.model, the_task)
        result = await evaluate(found.source, problems, the_task, toolbox,
                                concurrency=self.concurrency)
        rows = [{"id": r.problem_id, "answer": r.answer, "score": r.score,
                 "error": (r.error or "")[:200] or None} for r in result.results]
        return json.dumps({"harness": found.origin, "task": task, "split": split,
                           "mean_score": result.mean_score,
                           "completed": result.completed_fraction, "problems": rows})


class AdaptHarnessArgs(BaseModel):
    task: str = Field(description="Task name: rg:<reasoning-gym dataset>, hotpotqa, musique or 2wiki.")
    run_dir: str = Field(description="Directory for the run's log and versions (new, or one "
                         "to resume).")
    rounds: int = Field(1, ge=1, le=20, description="Adaptation rounds.")
    candidates: int = Field(1, ge=1, le=16, description="Proposals per round.")
    feedback: int = Field(4, ge=1, le=100, description="Feedback problems per round.")
    selection: int = Field(4, ge=1, le=200, description="Selection problems per round.")
    policy: Literal["strict", "best_valid", "racing"] | None = Field(
        None, description="Selection policy (track default if unset).")


class AdaptHarness(BaseTool):
    """Evolve a task's harness for a few rounds (or resume a run); report the rounds."""

    name: str = "adapt_harness"
    description: str = ("Adapt (evolve) the harness of a task for a few rounds: evaluate, ask "
                        "the Proposer model for edits, keep the better version. Returns JSON "
                        "with each round's scores and decision, and the run directory.")
    args_schema: type[BaseModel] = AdaptHarnessArgs
    handle_tool_error: bool = True
    solver: str = "local"
    proposer: str = "local"
    solver_params: dict[str, Any] = Field(default_factory=lambda: {"temperature": 0.0,
                                                                   "max_tokens": 256})
    proposer_params: dict[str, Any] = Field(default_factory=lambda: {"temperature": 0.7,
                                                                     "max_tokens": 2048})
    task_options: dict[str, Any] = Field(default_factory=dict)

    def _run(self, task: str, run_dir: str, **kwargs: Any) -> str:
        return _sync(self._arun(task, run_dir, **kwargs))

    async def _arun(self, task: str, run_dir: str, rounds: int = 1, candidates: int = 1,
                    feedback: int = 4, selection: int = 4, policy: str | None = None,
                    **_: object) -> str:
        from harness_learning.graphs.adapter.config import AdaptConfig
        from harness_learning.graphs.adapter.prepared import PreparedRun
        from harness_learning.graphs.adapter.run import load_config, prepare, run_adaptation
        from harness_learning.harnesses.rundir import RunDir

        resume = RunDir(run_dir).is_run()
        try:
            if resume:
                run = PreparedRun(load_config(run_dir))
            else:
                run = await asyncio.to_thread(prepare, AdaptConfig(
                    task=task, run_dir=run_dir, task_options=self.task_options,
                    solver=self.solver, proposer=self.proposer, solver_params=self.solver_params,
                    proposer_params=self.proposer_params, rounds=rounds, candidates=candidates,
                    feedback=feedback, selection=selection, policy=policy))
        except (ValueError, TypeError, FileNotFoundError) as exc:
            raise ToolException(str(exc)) from exc
        final = await run_adaptation(run.config, resume=resume, context=run.context())
        return json.dumps(adapt_summary(final, run_dir))


def adapt_summary(final: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """What an agent needs from a finished run: per round the scores and the decision."""
    rounds = [{"round": r.get("round"), "current_selection_score": r.get("current_selection_score"),
               "candidates": [{"index": c.get("index"), "valid": c.get("valid"),
                               "selection_score": c.get("selection_score"),
                               "invalid_reason": c.get("invalid_reason")}
                              for c in r.get("candidates", [])],
               "decision": r.get("decision"), "adopted": r.get("adopted")}
              for r in final.get("rounds", [])]
    return {"run_dir": run_dir, "current_version": (final.get("current_sha") or "")[:12],
            "best_score": final.get("best_score"), "stop_reason": final.get("stop_reason"),
            "rounds": rounds}


def harness_tools(model: str = "local", proposer: str | None = None) -> list[BaseTool]:
    """The three tools, with `model` as Solver (and Proposer unless given)."""
    return [RunHarness(model=model), EvaluateHarness(model=model),
            AdaptHarness(solver=model, proposer=proposer or model)]


__all__ = ["AdaptHarness", "EvaluateHarness", "RunHarness", "adapt_summary", "harness_tools"]
