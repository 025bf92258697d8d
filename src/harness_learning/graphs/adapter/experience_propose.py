"""Candidates from the experience library: the plan's `experience:ID` arms become proposals
through the one Proposer seam's record (`propose.CandidateProposal`), judged like any other.

An edit entry is handed to the judge as a SEARCH/REPLACE completion, an operator entry as its
operator's program; an entry the library no longer holds, or that no longer applies, is an
invalid candidate with the judge's reason, and the run goes on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness_learning.graphs.adapter.demonstrations import demonstrations
from harness_learning.graphs.adapter.experience import EXPERIENCE_PREFIX
from harness_learning.graphs.adapter.experience_search import completion_of, entry_for
from harness_learning.graphs.adapter.propose import (
    CandidateProposal,
    Check,
    propose,
    propose_operator,
)
from harness_learning.harnesses.edits.operators import OperatorError
from harness_learning.harnesses.experience import OPERATOR
from harness_learning.harnesses.llm.completion import Completion
from harness_learning.harnesses.store.records import proposal_id


def is_experience(payload: dict) -> bool:
    return str(payload.get("operator") or "").startswith(EXPERIENCE_PREFIX)


async def propose_any(ctx: Any, payload: dict, parent_source: str,
                      check: Check) -> CandidateProposal:
    """`propose`, or for an `experience:ID` arm the library entry's candidate."""
    if not is_experience(payload):
        return await propose(ctx, payload, parent_source, check)
    arm = str(payload["operator"])
    entry = await entry_for(ctx, arm, proposal_id(payload["round"], payload["index"]))
    origin = EXPERIENCE_PREFIX + (entry.short if entry else arm[len(EXPERIENCE_PREFIX):][:12])
    note = [{"role": "system", "content": f"experience entry {arm[len(EXPERIENCE_PREFIX):]}: "
             + (entry.summary if entry else "no longer in the library")}]
    text, fmt = "", "search_replace"
    if entry is not None and entry.kind == OPERATOR:
        demos = demonstrations(ctx, payload.get("feedback_ids") or [],
                               payload.get("selection_ids") or [])
        try:
            made = propose_operator(str(entry.operator), parent_source, demos)
            text, fmt = made.completion.text, made.edit_format
        except (KeyError, OperatorError) as exc:  # judged as no edit, with the reason noted
            note[0]["content"] += f" (does not apply: {exc})"
    elif entry is not None:
        text = completion_of(entry)
    completion = Completion(text=text, prompt_tokens=0, completion_tokens=0, latency_s=0.0,
                            finish_reason="stop", cached=True, model=origin)
    proposal = CandidateProposal(origin, note, completion, fmt)
    return replace(proposal, outcome=check(text, "stop", fmt))
