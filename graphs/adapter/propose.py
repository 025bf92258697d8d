"""The one Proposer seam: every candidate of a round is a `CandidateProposal` from `propose`.

Three sources write candidates: the LLM Proposer (a completion in the run's edit format), an
operator (a building block applied by rewriting the source, no model: `harnesses.edits.operators`)
and the merge of two candidates' edits (`parents.merge_candidate`). Each proposal records its
`origin` (`proposer`, `operator:NAME`, `merge`) and is logged as a draft before it is judged;
the one judge (`evals.judge`) judges them all alike, and `show`, `report` and the benchmarks
attribute each gain to its origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness_learning.graphs.adapter.proposer import build_proposer_messages
from harness_learning.harnesses.edits.operators import OPERATORS, apply_operator
from harness_learning.harnesses.llm.completion import LOGPROB_PARAMS, Completion

PROPOSER = "proposer"
MERGE = "merge"
OPERATOR_PREFIX = "operator:"


@dataclass(frozen=True)
class CandidateProposal:
    """One candidate from proposal to judging: what asked for it, what came back, in which
    edit format, and where it came from."""

    origin: str
    messages: Any
    completion: Completion
    edit_format: str


def operator_origin(name: str) -> str:
    return f"{OPERATOR_PREFIX}{name}"


def operator_name(origin: str) -> str | None:
    """The operator of an `operator:NAME` origin, else None."""
    return origin[len(OPERATOR_PREFIX):] if origin.startswith(OPERATOR_PREFIX) else None


def program_completion(source: str, model: str) -> Completion:
    """A whole program as a completion the judge parses like any whole-program edit."""
    return Completion(text=f"```python\n{source.rstrip()}\n```\n", prompt_tokens=0,
                      completion_tokens=0, latency_s=0.0, finish_reason="stop", cached=True,
                      model=model)


async def propose(ctx: Any, payload: dict, parent_source: str) -> CandidateProposal:
    """The candidate asked for by `payload` (a fan-out's `Send`): an operator's when it names
    one (`payload["operator"]`), else the LLM Proposer's."""
    name = payload.get("operator")
    if name is not None:
        return propose_operator(name, parent_source)
    return await propose_llm(ctx, payload, parent_source)


def propose_operator(name: str, parent_source: str) -> CandidateProposal:
    """Operator `name` applied to the parent (no model call)."""
    op = OPERATORS[name]
    source = apply_operator(op, parent_source)
    note = [{"role": "system", "content": f"operator {name}: {op.use}"}]
    return CandidateProposal(operator_origin(name), note,
                             program_completion(source, operator_origin(name)), "whole_program")


async def propose_llm(ctx: Any, payload: dict, parent_source: str) -> CandidateProposal:
    """One sample of the LLM Proposer on the round's report."""
    cfg = ctx.config
    round_, index = payload["round"], payload["index"]
    messages = build_proposer_messages(ctx.task.description, parent_source, payload["report"],
                                       cfg.edit_format, cfg.line_limit, user_tools=ctx.user_tools)
    seed = cfg.seed * 100_003 + round_ * 1_009 + index
    logprobs = LOGPROB_PARAMS if cfg.proposer_logprobs else {}
    proposer = await ctx.aget("proposer")
    completion = await proposer.acomplete(messages, **{**logprobs, **cfg.proposer_params,
                                                       "seed": seed})
    return CandidateProposal(PROPOSER, messages, completion, cfg.edit_format)
