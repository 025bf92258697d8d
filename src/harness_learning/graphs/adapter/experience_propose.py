"""Candidates from the experience library: the Proposer of a round's `experience:ID` slots
(`slots.Slot`), whose proposals are judged like any other.

An edit entry is handed to the judge as a SEARCH/REPLACE completion, an operator entry as its
operator's program; an entry the library no longer holds, or that no longer applies, is an
invalid candidate with the judge's reason, and the run goes on.
"""

from __future__ import annotations

from harness_learning.graphs.adapter.experience import EXPERIENCE_PREFIX, short_arm
from harness_learning.graphs.adapter.experience_search import completion_of, entry_for
from harness_learning.graphs.adapter.few_shot import demonstrations
from harness_learning.graphs.adapter.propose import (
    CandidateProposal,
    ProposalContext,
    propose_operator,
)
from harness_learning.harnesses.edits.operators import OperatorError
from harness_learning.harnesses.experience import OPERATOR
from harness_learning.harnesses.llm.completion import Completion
from harness_learning.harnesses.store.records import proposal_id


class ExperienceProposer:
    """Fills an `experience:ID` slot with the library entry's candidate (logged as the
    candidate's source: `experience_search.entry_for`)."""

    async def propose(self, context: ProposalContext) -> list[CandidateProposal]:
        ctx, entry_id = context.run, str(context.slot.name)
        arm = EXPERIENCE_PREFIX + entry_id
        entry = await entry_for(ctx, arm, proposal_id(context.round, context.slot.index))
        origin = short_arm(arm)
        note = [{"role": "system", "content": f"experience entry {entry_id}: "
                 + (entry.summary if entry else "no longer in the library")}]
        text, fmt = "", "search_replace"
        if entry is not None and entry.kind == OPERATOR:
            demos = demonstrations(ctx, context.feedback_ids, context.selection_ids)
            try:
                made = propose_operator(str(entry.operator), context.parent_source, demos)
                text, fmt = made.completion.text, made.edit_format
            except (KeyError, OperatorError) as exc:  # judged as no edit, with the reason noted
                note[0]["content"] += f" (does not apply: {exc})"
        elif entry is not None:
            text = completion_of(entry)
        completion = Completion(text=text, prompt_tokens=0, completion_tokens=0, latency_s=0.0,
                                finish_reason="stop", cached=True, model=origin)
        return [CandidateProposal(origin, note, completion, fmt)]
