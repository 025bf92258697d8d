"""The one Proposer seam: a round's candidates are planned as typed slots, and each slot's
`Proposer` turns it into a `CandidateProposal`.

Four Proposers fill slots: the LLM Proposer (a completion in the run's edit format), an
operator (a building block applied by rewriting the source, no model:
`harnesses.edits.operators`), the merge of two candidates' edits (`parents.MergeProposer`) and
an experience library entry (`experience_propose.ExperienceProposer`). Each proposal records its
`origin` (`proposer`, `operator:NAME`, `merge`, `experience:ID`) and is logged as a draft before
it is judged; the one judge (`evals.judge`) judges them all alike, and `show`, `report` and the
benchmarks attribute each gain to its origin. The slots are planned in `slots.py`; the round
itself reads in `rounds.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from harness_learning.evals.judge import Outcome
from harness_learning.graphs.adapter.experience_search import past_successes
from harness_learning.graphs.adapter.few_shot import demonstrations
from harness_learning.graphs.adapter.llm_attempts import ProposerAttempts
from harness_learning.graphs.adapter.proposer import (
    build_focused_messages,
    build_proposer_messages,
    echo_stops,
)
from harness_learning.graphs.adapter.repair import second_chances
from harness_learning.graphs.adapter.run_memory import run_memory
from harness_learning.graphs.adapter.slots import PROPOSER, Slot
from harness_learning.harnesses.edits.function_edit import focus_targets
from harness_learning.harnesses.edits.operators import OPERATORS, Demonstrations, apply_operator
from harness_learning.harnesses.llm.completion import Completion
from harness_learning.harnesses.store.records import proposal_id

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.context import AdapterContext

OPERATOR_PREFIX = "operator:"


@dataclass(frozen=True)
class CandidateProposal:
    """One candidate from proposal to judging: what asked for it, what came back, in which
    edit format, and where it came from."""

    origin: str
    messages: list[dict[str, str]]
    completion: Completion
    edit_format: str
    outcome: Outcome | None = None
    """The judge's static check of `completion`, made once while proposing."""


class Judge(Protocol):
    """The round's judge as a Proposer sees it: the static check of a completion (its text,
    finish reason and edit format), `evals.judge.check_candidate` against the round's parent
    (`rounds.RoundJudge`)."""

    def check(self, text: str, finish_reason: str | None, edit_format: str) -> Outcome: ...


@dataclass(frozen=True)
class ProposalContext:
    """What a Proposer is given for one slot: the run (`AdapterContext`), the slot, the
    round's facts as sent to the candidate node (`payload`: round, parent, report, problem
    ids), the parent's source, the round's judge and the round's judged candidates (what the
    merge combines)."""

    run: AdapterContext
    slot: Slot
    payload: Mapping[str, Any]
    parent_source: str
    judge: Judge
    candidates: tuple[Mapping[str, Any], ...] = ()

    @property
    def round(self) -> int:
        return int(self.payload["round"])

    @property
    def feedback_ids(self) -> list[str]:
        return list(self.payload.get("feedback_ids") or [])

    @property
    def selection_ids(self) -> list[str]:
        return list(self.payload.get("selection_ids") or [])


class Proposer(Protocol):
    """Fills a slot: the candidates it proposes for it (none when it has nothing to offer,
    as the merge without two valid candidates). A proposal may carry the judge's check
    (`CandidateProposal.outcome`) when proposing needed it; the round judges the others."""

    async def propose(self, context: ProposalContext) -> list[CandidateProposal]: ...


def operator_origin(name: str) -> str:
    return f"{OPERATOR_PREFIX}{name}"


def program_completion(source: str, model: str) -> Completion:
    """A whole program as a completion the judge parses like any whole-program edit."""
    return Completion(text=f"```python\n{source.rstrip()}\n```\n", prompt_tokens=0,
                      completion_tokens=0, latency_s=0.0, finish_reason="stop", cached=True,
                      model=model)


Check = Callable[[str, str | None, str], Outcome]
"""The judge's static check of a completion (its text, finish reason and edit format):
`evals.judge.check_candidate` bound to the round's parent, exposure and rules."""


def propose_operator(name: str, parent_source: str,
                     demos: Demonstrations = ()) -> CandidateProposal:
    """Operator `name` applied to the parent (no model call), given the round's `demos`."""
    op = OPERATORS[name]
    source = apply_operator(op, parent_source, demos)
    note = [{"role": "system", "content": f"operator {name}: {op.use}"}]
    return CandidateProposal(operator_origin(name), note,
                             program_completion(source, operator_origin(name)), "whole_program")


class OperatorProposer:
    """Fills an operator's slot: its building block applied to the parent (no model call)."""

    async def propose(self, context: ProposalContext) -> list[CandidateProposal]:
        demos = demonstrations(context.run, context.feedback_ids, context.selection_ids)
        return [propose_operator(str(context.slot.name), context.parent_source, demos)]


def proposer_messages(ctx: AdapterContext, payload: dict, parent_source: str,
                      memory: Sequence[str] = (), past: str = "") -> list[dict[str, str]]:
    """The prompt of one LLM candidate, with the run's `memory` (`memory.run_memory`) and the
    experience library's `past` successes (`experience_search.past_successes`). Format
    `function` asks for one node function, taken in turn over the graph's nodes (round and
    candidate index), as GEPA mutates one component (`function_edit.focus_targets`, which
    refuses a harness that is only a compiled graph: `prepare` refuses it before a run)."""
    cfg = ctx.config
    if cfg.edit_format == "function":
        nodes = focus_targets(parent_source)
        target = nodes[(payload["round"] - 1 + payload["index"]) % len(nodes)]
        return build_focused_messages(ctx.task.description, parent_source, payload["report"],
                                      target, user_tools=ctx.user_tools, memory=memory,
                                      past=past, blocks=cfg.block_menu)
    return build_proposer_messages(ctx.task.description, parent_source, payload["report"],
                                   cfg.edit_format, cfg.line_limit, user_tools=ctx.user_tools,
                                   memory=memory, past=past, blocks=cfg.block_menu)


class LLMProposer:
    """Fills a Proposer sample's slot: one completion, judged while it is drawn (a completion
    the judge refuses gets its second chances)."""

    async def propose(self, context: ProposalContext) -> list[CandidateProposal]:
        return [await propose_llm(context.run, dict(context.payload), context.parent_source,
                                  context.judge.check)]


async def propose_llm(ctx: AdapterContext, payload: dict, parent_source: str,
                      check: Check) -> CandidateProposal:
    """One LLM candidate with its second chances (`repair.second_chances`), every attempt
    logged and priced (`llm_attempts.ProposerAttempts`). The prompt carries this run's
    memory and the experience library's past successes."""
    cfg = ctx.config
    proposer = await ctx.aget("proposer")
    stops = echo_stops(parent_source) if cfg.proposer_echo_stop else []
    attempts = ProposerAttempts(ctx, payload, proposer, check, stops)
    seed = cfg.seed * 100_003 + payload["round"] * 1_009 + payload["index"]
    memory = await asyncio.to_thread(run_memory, ctx.store, payload["round"],
                                     getattr(cfg, "memory_tokens", 0))
    past = await past_successes(ctx, payload, proposal_id(payload["round"], payload["index"]))
    messages, completion, outcome = await second_chances(
        proposer_messages(ctx, payload, parent_source, memory, past), seed, parent_source,
        attempts.sample, attempts.judged, turns=cfg.second_chance_turns)
    await attempts.close()
    return CandidateProposal(PROPOSER, messages, completion, cfg.edit_format, outcome)
