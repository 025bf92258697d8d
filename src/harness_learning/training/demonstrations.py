"""Demonstrations for SFT from execution logs, in the Proposer's own focused format.

A demonstration is a prompt the Proposer saw in a round (the focused prompt: report and source,
"Rewrite the function `NAME`") and a completion that rewrites that node function. Two sources:

- Proposer edits in the `function` format that are valid and beat their parent on the round's
  selection problems: the logged completion, as written.
- Operator adoptions (`operator:interpreter`, valid and above their parent): the completion is
  the strategy written inline into the node (`harnesses.edits.inline`), so a student learns to
  write the loop, not to call the block. The prompt is the focused prompt a Proposer sample of
  the same round and parent was sent.

Judging is read from the log (the judge's `valid`, `selection_score`, `parent_score`); nothing
is re-run, and an entry the log holds no score for is left out as unscored. No selection or
test problem of the run may appear in a demonstration: their questions are rebuilt from the
run's task and looked for in the prompt and the completion. The set records a hash of the
prompt format (the prompt's fixed parts) and keeps only the most common one.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.edits.errors import EditError
from harness_learning.harnesses.edits.function_edit import (
    apply_function,
    is_program,
    parse_function,
    parsed_block,
)
from harness_learning.harnesses.edits.inline import INLINERS, inline_block, inlined_function
from harness_learning.harnesses.edits.operators import OperatorError
from harness_learning.training.data import LogError, as_messages, open_log

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from harness_learning.harnesses.store import LogStore
    from harness_learning.harnesses.store import Proposal as ProposalRecord

FOCUS = re.compile(r"^## Your job\nRewrite the function `([A-Za-z_]\w*)`", re.M)
HEADING = re.compile(r"^## .+$", re.M)
FIXED_SECTIONS = ("## Tools", "## Building blocks", "## Your job")
"""Sections of the focused prompt that do not depend on the round: with the system message and
the headings, what the prompt-format hash covers."""
PROGRAM_HEADINGS = ("## Program", "## Current program")
"""The section after the task's in the Proposer's prompts: headings before it are the task
description's own text (reasoning-gym's number_sorting has "## 1. ..." lines)."""
OPERATOR = "operator:"


@dataclass
class DemoSummary:
    """What the set holds and what was left out, by reason."""

    runs: int = 0
    read: int = 0
    kept: Counter = field(default_factory=Counter)
    """Demonstrations by source (`proposer`, `operator:interpreter`)."""
    left_out: Counter = field(default_factory=Counter)
    distinct_completions: int = 0
    distinct_parents: int = 0
    prompt_format: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (`dataclasses.asdict` would rebuild the Counters from pairs)."""
        return {**vars(self), "kept": dict(self.kept), "left_out": dict(self.left_out)}

    def lines(self) -> list[str]:
        kept = ", ".join(f"{n} {s}" for s, n in sorted(self.kept.items())) or "none"
        out = [f"{self.runs} runs, {self.read} candidates read; demonstrations: {kept}; "
               f"{self.distinct_completions} distinct completions, {self.distinct_parents} "
               f"distinct parent sources; prompt format {self.prompt_format or '-'}"]
        out += [f"left out {n}: {why}" for why, n in sorted(self.left_out.items())]
        return out


def focused_function(messages: list[dict[str, str]]) -> str | None:
    """The node function a focused prompt asks to rewrite; None for another prompt."""
    user = "\n".join(m["content"] for m in messages if m["role"] == "user")
    found = FOCUS.search(user)
    return found.group(1) if found else None


def prompt_format(messages: list[dict[str, str]]) -> str:
    """A hash of the prompt's fixed parts: system message, headings, and the sections that do
    not change with the round (the function's name masked)."""
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    user = "\n".join(m["content"] for m in messages if m["role"] == "user")
    starts, in_task = [], False
    for m in HEADING.finditer(user):  # a task description's own "## " lines are task text
        in_task = m.group(0) == "## Task" or (in_task and not m.group(0).startswith(
            PROGRAM_HEADINGS))
        if not in_task or m.group(0) == "## Task":
            starts.append(m.start())
    starts.append(len(user))
    parts = [system]
    for a, b in zip(starts, starts[1:], strict=False):
        section = user[a:b]
        heading = section.split("\n", 1)[0]
        parts.append(FOCUS.sub("## Your job\nRewrite the function `_`", section.strip())
                     if heading.startswith(FIXED_SECTIONS) else heading)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def held_questions(store: LogStore) -> list[str]:
    """The questions of every selection and test problem the run scored (rebuilt from its
    task); `LogError` when they cannot be, since the check must not pass blind."""
    from harness_learning.evals.registry import get_task

    ids = {e.result.problem_id for purpose in ("selection", "test")
           for e in store.iter_evaluations(purpose=purpose)}
    config = (store.get_run().config if store.get_run() else {}) or {}
    if not ids:
        return []
    try:
        task = get_task(config["task"], **dict(config.get("task_options") or {}))
        by_id = {p.id: p.question for p in [*task.dev(), *task.test()]}
    except Exception as err:  # noqa: BLE001 - any failure to rebuild the task is reported
        raise LogError(f"cannot rebuild the task of the run to check its selection and test "
                       f"problems: {str(err)[:200]}") from err
    missing = sorted(ids - by_id.keys())
    if missing:
        raise LogError(f"{len(missing)} selection/test problems (e.g. {missing[0]}) are not in "
                       f"the task {config.get('task')!r} as rebuilt")
    return [by_id[i] for i in sorted(ids)]


def _judged(p: ProposalRecord, keep_ties: bool = False) -> str | None:
    """Why a candidate is no success by the log's judging (None: valid and above its parent,
    or level with it under `keep_ties`)."""
    if not p.valid:
        return "invalid"
    if p.selection_score is None or p.parent_score is None:
        return "unscored on selection in the log"
    if float(p.selection_score) < float(p.parent_score) or (
            float(p.selection_score) == float(p.parent_score) and not keep_ties):
        return "not above its parent on selection"
    return None


def _focused_prompts(proposals: list[ProposalRecord]
                     ) -> dict[tuple[int, str | None], ProposalRecord]:
    """(round, parent) -> the first Proposer proposal of it that was sent a focused prompt."""
    out: dict[tuple[int, str | None], ProposalRecord] = {}
    for p in proposals:
        if p.origin == "proposer" and focused_function(as_messages(p.prompt)):
            out.setdefault((p.round, p.parent_sha), p)
    return out


def _demonstration(p: ProposalRecord, store: LogStore,
                   prompts: dict[tuple[int, str | None], ProposalRecord],
                   keep_ties: bool = False) -> tuple[dict | None, str | None]:
    """(the row, None) for a success, or (None, why it is left out)."""
    if p.origin == "merge":
        return None, "merge candidate (no single parent prompt)"
    why = _judged(p, keep_ties)
    if why:
        return None, why
    if p.origin.startswith(OPERATOR):
        if p.origin[len(OPERATOR):] not in INLINERS:
            return None, f"no inliner for {p.origin}"
        asked = prompts.get((p.round, p.parent_sha))
        if asked is None:
            return None, "operator candidate with no focused prompt logged for its round"
        messages = as_messages(asked.prompt)
        parent = store.get_version_source(p.parent_sha)
        try:
            unwrapped, code = inlined_function(store.get_version_source(p.candidate_sha),
                                               p.origin[len(OPERATOR):])
            if unwrapped != parent or apply_function(parent, code) != inline_block(
                    store.get_version_source(p.candidate_sha), p.origin[len(OPERATOR):]):
                return None, "inlined function does not rewrite the parent"
        except (OperatorError, EditError) as err:
            return None, f"not inlined: {err}"
        completion = f"```python\n{code}```"
    else:
        messages = as_messages(p.prompt)
        if p.edit_format != "function" or focused_function(messages) is None:
            return None, "not a focused (function-format) prompt"
        completion, parent = p.completion, store.get_version_source(p.parent_sha)
        try:
            code = parse_function(completion)
            if is_program(parsed_block(code)):
                return None, "completion is a whole program, not the node function"
        except EditError:
            return None, "completion holds no function"
    name = focused_function(messages)
    if f"def {name}(" not in code:
        return None, "the completion rewrites another function than the prompt names"
    return {"prompt": messages, "completion": [{"role": "assistant", "content": completion}],
            "source": p.origin, "function": name, "parent_source": parent,
            "selection_score": float(p.selection_score), "parent_score": float(p.parent_score),
            "judged": "log", "prompt_format": prompt_format(messages),
            "provenance": {"proposal_id": p.id, "round": p.round, "parent_sha": p.parent_sha,
                           "candidate_sha": p.candidate_sha, "model": p.model,
                           "prompt_from": getattr(prompts.get((p.round, p.parent_sha)), "id",
                                                  p.id)}}, None


def _questions_or_reason(store: LogStore) -> list[str] | str:
    """The held questions, or why they are unknown (each row of the run is then left out)."""
    try:
        return held_questions(store)
    except LogError:
        return "selection/test problems unknown (the run's task does not rebuild)"


def _shows(row: dict, questions: list[str]) -> str | None:
    """Why the row is left out for showing a selection or test problem's question, or None.
    The task description's example question is named apart: it is the adapter's prompt, not
    the report, that shows it."""
    text = "\n".join([*(m["content"] for m in row["prompt"]), row["completion"][0]["content"]])
    shown = [q.strip() for q in questions if q.strip() and q.strip() in text]
    if not shown:
        return None
    rest = re.sub(r"^## Task\n.*?(?=^## |\Z)", "", text, count=1, flags=re.M | re.S)
    if not any(q in rest for q in shown):
        return "shows a selection or test problem (the task description's example question)"
    return "shows a selection or test problem"


def demonstrations(run_dirs: Sequence[str | Path],
                   keep_ties: bool = False) -> tuple[list[dict], DemoSummary]:
    """The demonstration rows of every run, and the summary; `LogError` when none is usable
    (its message says what was left out and why). `keep_ties` also keeps valid candidates level
    with their parent: only for a smoke run, whose tiny Solver rarely lets anything win."""
    summary, rows, seen = DemoSummary(runs=len(run_dirs)), [], set()
    for run_dir in map(Path, run_dirs):
        with open_log(run_dir) as store:
            proposals = list(store.iter_proposals())
            prompts, questions = _focused_prompts(proposals), None
            for p in proposals:
                summary.read += 1
                row, why = _demonstration(p, store, prompts, keep_ties)
                if row is not None and questions is None:
                    questions = _questions_or_reason(store)
                if row is not None and isinstance(questions, str):
                    row, why = None, questions
                elif row is not None and _shows(row, questions):
                    row, why = None, _shows(row, questions)
                key = row and (row["prompt_format"], str(row["prompt"]),
                               row["completion"][0]["content"].strip())
                if row is not None and key in seen:
                    row, why = None, "duplicate of an earlier demonstration"
                if row is None:
                    summary.left_out[why] += 1
                    continue
                seen.add(key)
                row["provenance"]["run"] = str(run_dir)
                rows.append(row)
    return _one_format(rows, summary), summary


def _one_format(rows: list[dict], summary: DemoSummary) -> list[dict]:
    """The rows of the most common prompt format (the others are counted out)."""
    formats = Counter(r["prompt_format"] for r in rows)
    if formats:
        summary.prompt_format = formats.most_common(1)[0][0]
    kept = [r for r in rows if r["prompt_format"] == summary.prompt_format]
    if len(kept) < len(rows):
        summary.left_out["made with another prompt format"] += len(rows) - len(kept)
    summary.kept = Counter(r["source"] for r in kept)
    summary.distinct_completions = len({r["completion"][0]["content"].strip() for r in kept})
    summary.distinct_parents = len({r["parent_source"] for r in kept})
    if not kept:
        why = "; ".join(f"{n} {w}" for w, n in sorted(summary.left_out.items())) or "no candidates"
        raise LogError(f"no usable demonstration in {summary.runs} run(s) ({summary.read} "
                       f"candidates read: {why})")
    return kept


PROMPT_AIM = 900
"""Tokens a demonstration's prompt should stay within: on 2 cores an SFT step's cost grows with
the sequence (training/README.md), and ~30 demonstrations x 2 epochs fit in about 90 minutes
only with a prompt this short."""


def token_counts(rows: Sequence[dict], tokenizer: PreTrainedTokenizerBase) -> dict[str, Any]:
    """Prompt and completion tokens of each row under `tokenizer`'s chat template (what SFT
    trains on), their means and maxima, and how many prompts exceed `PROMPT_AIM`."""
    prompts, completions = [], []
    for row in rows:
        prompt = tokenizer.apply_chat_template(row["prompt"], tokenize=False,
                                               add_generation_prompt=True)
        whole = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
        n_prompt = len(tokenizer(prompt)["input_ids"])
        prompts.append(n_prompt)
        completions.append(len(tokenizer(whole)["input_ids"]) - n_prompt)

    def stats(values: list[int]) -> dict[str, float]:
        return {"mean": round(sum(values) / len(values), 1) if values else 0.0,
                "max": max(values, default=0)}

    return {"rows": len(prompts), "prompt": stats(prompts), "completion": stats(completions),
            "prompts_over_aim": sum(n > PROMPT_AIM for n in prompts), "aim": PROMPT_AIM,
            "per_row": [[p, c] for p, c in zip(prompts, completions, strict=True)]}
