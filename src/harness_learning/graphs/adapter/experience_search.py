"""The experience library in the search (`AdaptConfig.experience`).

- Learned operators: a library entry whose change applies mechanically to the current source
  (its SEARCH/REPLACE blocks all match, or it is a registered operator that fits) is an arm
  of the round's plan, and its candidate has origin `experience:ID`: an edit is given to the
  judge as a SEARCH/REPLACE completion, so an entry that no longer applies is an invalid
  candidate with the judge's reason (`unmatched_search`), judged like any other.
- A learned choice: the round's arms (the configured operators that fit, and the applicable
  entries) are ordered by Thompson draws from their Beta posteriors, with evidence weighted
  by BM25 similarity of each past outcome's task and failure signature to this round's
  (`harnesses.experience.choice`), and an arm whose posterior mean is below `TRY_BAR` is not
  tried (logged as `experience.PLAN_EVENT`); without evidence the configured order stays,
  so an empty library plans exactly as `operator_plan` does without one.
- Past successes in the prompt: the `experience_shown` most relevant entries that gained,
  as worked diffs with their measured gain, within `experience_tokens`.

Which entry a candidate came from, and which entries its prompt showed, are logged as events
(`experience.CANDIDATE_EVENT`, `SHOWN_EVENT`) that `show` and `--json` read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness_learning.graphs.adapter.experience import (
    CANDIDATE_EVENT,
    EXPERIENCE_PREFIX,
    PLAN_EVENT,
    SHOWN_EVENT,
    failure_signature,
)
from harness_learning.graphs.adapter.run_memory import CHARS_PER_TOKEN
from harness_learning.harnesses.edits.edit import Block, Edit
from harness_learning.harnesses.edits.errors import EditError
from harness_learning.harnesses.edits.operators import (
    OPERATORS,
    Demonstrations,
    apply_operator,
    fitting,
    misfit,
    resolve_operators,
)
from harness_learning.harnesses.edits.search_replace import apply_blocks
from harness_learning.harnesses.experience import OPERATOR, Entry, Library
from harness_learning.harnesses.experience.choice import (
    TRY_BAR,
    Posterior,
    posteriors,
    ranked,
    successes,
    thompson_draws,
    weighted,
)
from harness_learning.harnesses.experience.entry import operator_id
from harness_learning.harnesses.store import source_sha
from harness_learning.harnesses.text_safety import data_block

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.context import PlanningContext

PAST_HEADING = "## Past successes in other runs"
PAST_NOTE = ("(Changes that raised the score of a similar task's program, each with its measured "
             "gain. Reuse an idea only where it fits this program.)")


def library_entries(path: str) -> list[Entry]:
    with Library(path) as lib:
        return lib.entries()


def edit_of(entry: Entry) -> Edit:
    return Edit("search_replace", tuple(Block(s, r) for s, r in entry.blocks))


def completion_of(entry: Entry) -> str:
    """The entry's blocks as a SEARCH/REPLACE completion (what the judge parses)."""
    parts = [f"<<<<<<< SEARCH\n{s}\n=======\n{r}\n>>>>>>> REPLACE" for s, r in entry.blocks]
    return "\n\n".join(parts) + "\n"


def applied(entry: Entry, source: str, demos: Demonstrations) -> str | None:
    """The source with `entry`'s change applied, or None when it does not apply."""
    if entry.kind == OPERATOR:
        op = OPERATORS.get(entry.operator or "")
        if op is None or misfit(op, source, demos) is not None:
            return None
        return apply_operator(op, source, demos)
    if not entry.blocks:
        return None
    try:
        return apply_blocks(source, edit_of(entry))
    except EditError:
        return None


async def round_context(ctx: PlanningContext, sha: str, feedback_ids: list[str]) -> str:
    """This round's task description and the failure signature of its report (the parent's
    feedback results): what past outcomes are compared with."""
    done = await ctx.store.aget_results(sha, feedback_ids, "feedback")
    signature = failure_signature(ctx.problems, done.values())
    return f"{ctx.task.description}\n{signature.text()}"


async def learned_plan(ctx: PlanningContext, sha: str, round_: int, demos: Demonstrations,
                       feedback_ids: list[str]) -> list[str]:
    """The round's arms by their Thompson draws, those whose candidate an earlier round
    judged and those whose posterior mean is below `TRY_BAR` left out, at most
    `operators_per_round`: operator names and `experience:ID`."""
    cfg = ctx.config
    source = await ctx.store.aget_version_source(sha)
    entries = await asyncio.to_thread(library_entries, cfg.experience)
    ops = [op.name for op in fitting(resolve_operators(cfg.operators), source, demos)]
    candidates: dict[str, str] = {}
    for name in ops:
        candidates[name] = apply_operator(OPERATORS[name], source, demos)
    for entry in entries:
        if entry.kind == OPERATOR and entry.operator in ops:
            continue  # the operator's own arm carries its evidence
        new = applied(entry, source, demos)
        if new is not None and new != source:
            candidates[EXPERIENCE_PREFIX + entry.id] = new
    arms = [a for a, new in candidates.items() if await untried(ctx, new, round_)]
    evidence = weighted(entries, await round_context(ctx, sha, feedback_ids))
    by_entry = posteriors(entries, evidence)
    by_arm = {a: p for a in arms if (p := by_entry.get(_entry_id(a))) is not None}
    draws = thompson_draws(arms, by_arm, cfg.seed, round_)
    order = ranked(arms, draws, by_arm, bar=TRY_BAR)
    if draws is not None and len(order) < len(arms):
        await ctx.store.aappend_event(PLAN_EVENT, {
            "round": round_, "bar": TRY_BAR, "tried": order[:cfg.operators_per_round],
            "left_out": {a: round(by_arm.get(a, Posterior()).mean, 3) for a in arms
                         if a not in order}})
    return order[:cfg.operators_per_round]


def _entry_id(arm: str) -> str:
    return arm[len(EXPERIENCE_PREFIX):] if arm.startswith(EXPERIENCE_PREFIX) else operator_id(arm)


async def entry_for(ctx: PlanningContext, arm: str, proposal: str) -> Entry | None:
    """The library entry behind arm `experience:ID`, logged as the candidate's source (None:
    the library no longer holds it)."""
    entries = await asyncio.to_thread(library_entries, ctx.config.experience)
    entry = next((e for e in entries if e.id == _entry_id(arm)), None)
    if entry is not None:
        await ctx.store.aappend_event(CANDIDATE_EVENT, {
            "proposal_id": proposal, "entry": entry.id, "kind": entry.kind,
            "operator": entry.operator, "blocks": [list(b) for b in entry.blocks],
            "diff": entry.diff})
    return entry


async def past_successes(ctx: PlanningContext, payload: dict, proposal: str) -> str:
    """The prompt section of past successes for this round ("" without any), logged with
    the entries it shows."""
    cfg = ctx.config
    if not getattr(cfg, "experience", "") or cfg.experience_shown <= 0:
        return ""
    entries = await asyncio.to_thread(library_entries, cfg.experience)
    context = await round_context(ctx, payload["current_sha"], payload.get("feedback_ids") or [])
    lines, shown = worked_diffs(successes(entries, context, cfg.experience_shown),
                                cfg.experience_tokens)
    if shown:
        await ctx.store.aappend_event(SHOWN_EVENT, {"proposal_id": proposal, "entries": shown})
    return section(lines)


def worked_diffs(picks: list[tuple[Entry, float]], tokens: int) -> tuple[list[str], list[str]]:
    """(lines, entry ids shown): each pick's gain line and diff, most relevant first, as many
    whole picks as fit `tokens` (characters / `CHARS_PER_TOKEN`) with the heading."""
    shown: list[str] = []
    lines: list[str] = []
    for entry, gain in picks:
        block = [f"# gain {gain:+.3f} ({entry.summary}; entry {entry.short})",
                 *entry.diff.splitlines()]
        if len(section([*lines, *block])) > tokens * CHARS_PER_TOKEN:
            break
        lines += block
        shown.append(entry.id)
    return lines, shown


def section(lines: list[str]) -> str:
    """The past successes as one quoted data block ("" for none)."""
    return "\n".join([PAST_HEADING, PAST_NOTE, *data_block(lines)]) if lines else ""


async def operator_plan(ctx: PlanningContext, sha: str, round_: int,
                        demos: Demonstrations = (), feedback_ids: Iterable[str] = ()
                        ) -> list[str]:
    """The operators this round tries on version `sha`: those `AdaptConfig.operators` names
    that fit it (given the round's `demos`, see demonstrations.py), skipping any whose
    candidate an earlier round already judged, at most `operators_per_round`. Decided from the
    source's syntax tree (`harnesses.edits.operators`). With an experience library, the
    learned plan instead (`learned_plan`); moved here from nodes.py to sit beside it."""
    if getattr(ctx.config, "experience", ""):
        return await learned_plan(ctx, sha, round_, demos, list(feedback_ids))
    ops = resolve_operators(ctx.config.operators)
    if not ops:
        return []
    source = await ctx.store.aget_version_source(sha)
    plan = []
    for op in fitting(ops, source, demos):
        if await untried(ctx, apply_operator(op, source, demos), round_):
            plan.append(op.name)
        if len(plan) == ctx.config.operators_per_round:
            break
    return plan


async def untried(ctx: PlanningContext, new_source: str, round_: int) -> bool:
    """No earlier round stored `new_source` (this round's own may have: a resumed round)."""
    tried = await asyncio.to_thread(ctx.store.get_version, source_sha(new_source))
    return tried is None or tried.round >= round_
