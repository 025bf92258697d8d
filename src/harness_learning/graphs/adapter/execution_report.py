"""The feedback report the Proposer reads (docs/ARCHITECTURE.md, "One round's data path").

Per feedback problem: question, gold answer (and gold supporting titles for QA), prediction and
score, the tool calls with trimmed arguments and results, the documents read, the traceback's last
frames and a likely cause. Identical failures are folded ("x3"). The report is rendered at
decreasing detail (see `LADDER`) until it fits `budget_chars`: correct problems' traces go first,
then long tool results, then older calls, then tracebacks and documents, then long questions.
Every wrong answer keeps its question/gold/prediction line; only when those lines alone exceed
the budget is the report longer than asked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness_learning.evals.problem import Problem, gold_answer, gold_text
from harness_learning.evals.result import EvalResult
from harness_learning.harnesses.contract import JUDGE_OP, ToolCall
from harness_learning.harnesses.results import HARNESS_FAULTS, ErrorKind, ProblemResult
from harness_learning.harnesses.text_safety import data_block

REPORT_TITLE = "# Feedback report"
"""The report's first words (`proposer.ECHO_STOPS` stops a reply that starts copying them)."""

if TYPE_CHECKING:
    from harness_learning.evals.task import Task

ORDER = ("error", "wrong", "partial", "correct", "unscored")


@dataclass(frozen=True)
class Detail:
    """One rung of the budget ladder."""

    correct_traces: bool = True
    correct_lines: bool = True
    arg_chars: int = 400
    result_chars: int = 800
    max_calls: int | None = None
    """Keep only the last N calls of each trace (None = all)."""
    tb_frames: int = 4
    documents: bool = True
    field_chars: int = 2000
    """Cap on question, gold and prediction text."""


_D = Detail()
LADDER: tuple[Detail, ...] = (
    _D,
    replace(_D, correct_traces=False),
    replace(_D, correct_traces=False, arg_chars=200, result_chars=300),
    replace(_D, correct_traces=False, arg_chars=120, result_chars=120, max_calls=8),
    replace(_D, correct_traces=False, arg_chars=100, result_chars=80, max_calls=4, tb_frames=2),
    replace(_D, correct_traces=False, correct_lines=False, arg_chars=60, result_chars=60,
            max_calls=2, tb_frames=1, field_chars=600),
    replace(_D, correct_traces=False, correct_lines=False, max_calls=0, tb_frames=0,
            documents=False, field_chars=300),
    replace(_D, correct_traces=False, correct_lines=False, max_calls=0, tb_frames=0,
            documents=False, field_chars=120),
    replace(_D, correct_traces=False, correct_lines=False, max_calls=0, tb_frames=0,
            documents=False, field_chars=50),
)


@dataclass
class Item:
    problem: Problem
    result: ProblemResult
    status: str
    cause: str | None = None


def trim(text: object, limit: int) -> str:
    """One line, at most `limit` characters, keeping the start and the end."""
    s = " ".join(str(text).split())
    if len(s) <= limit:
        return s
    if limit < 20:
        return s[: max(limit - 1, 0)] + "…"
    head = (limit - 12) * 2 // 3
    tail = limit - 12 - head
    return f"{s[:head]} …[{len(s) - head - tail}]… {s[len(s) - tail:]}"


def _status(r: ProblemResult) -> str:
    if r.score is None:
        return "unscored"
    if r.error_kind in HARNESS_FAULTS:
        return "error"
    if r.score >= 1.0 - 1e-9:
        return "correct"
    return "partial" if r.score > 0 else "wrong"


def gold_titles(problem: Problem) -> list[str]:
    meta = problem.meta or {}
    for key in ("supporting_titles", "gold_titles"):
        if meta.get(key):
            return [str(t) for t in meta[key]]
    return []


def _field(obj: object, name: str, default: object = None) -> object:
    """A field of a record that may have crossed the bridge as a dict or stayed an object."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    if isinstance(obj, str | bytes | int | float | list | tuple) or obj is None:
        return default
    return getattr(obj, name, default)


def documents_read(result: ProblemResult) -> list[str]:
    """Titles of every passage the harness got back from search, first occurrence first."""
    seen: dict[str, None] = {}
    for call in result.calls:
        if call.tool == "search" and isinstance(call.result, list):
            for p in call.result:
                title = _field(p, "title")
                if title is not None:
                    seen.setdefault(str(title), None)
    return list(seen)


KILLED = {ErrorKind.TIMEOUT: "control flow (ran out of time)",
          ErrorKind.MEMORY: "resources (passed its memory limit)",
          ErrorKind.PIDS: "resources (started too many processes or threads)"}
"""The cause of a run the sandbox killed, by the limit it passed."""


def likely_cause(item: Item) -> str:
    """A rough label for why a problem failed; a hint for the Proposer, not a diagnosis."""
    r, text = item.result, f"{item.result.error or ''}\n{item.result.traceback or ''}".lower()
    if any(k in text for k in ("context length", "context window", "too many tokens", "maximum context")):
        return "memory/context"
    if r.error_kind in KILLED:
        return KILLED[r.error_kind]
    if r.error_kind == ErrorKind.METRIC:  # the harness answered; the task's metric could not read it
        return "prompt (the metric could not score the answer: not in the expected form)"
    if any(c.error for c in r.calls):
        return "tool use (a tool call failed)"
    if r.error_kind in HARNESS_FAULTS:
        return "control flow (the harness raised)"
    answer, gold = (r.answer or "").strip(), gold_answer(item.problem)
    if not answer:
        return "control flow (no answer extracted)"
    titles = gold_titles(item.problem)
    if titles and not set(titles) <= set(documents_read(r)):
        if repeated_search(r):
            return "tool use (gold evidence not retrieved; a search repeated an earlier one)"
        return "tool use (gold evidence not retrieved)"
    replies = " ".join(str(c.result) for c in r.calls if c.tool == "llm")
    if gold and gold.lower() in replies.lower() and gold.lower() not in answer.lower():
        return "control flow (the Solver said it, the answer extraction lost it)"
    if len(answer) > 3 * len(gold) + 20:
        return "prompt (answer not in the expected short form)"
    own = harness_calls(r)
    if not own or (len(own) == 1 and own[0].tool == "llm"):
        return "missing skill (one unchecked Solver call)"
    return "solver (its own error)"


def repeated_search(r: ProblemResult) -> bool:
    """Whether the harness sent the same search twice on one problem: a later hop that found
    nothing new, as when its next query was not read from the Solver's reply."""
    sent = [json.dumps(c.args, sort_keys=True, default=str) for c in harness_calls(r)
            if c.tool == "search"]
    return len(sent) > len(set(sent))


def _signature(item: Item) -> tuple | None:
    """Items with equal signatures are the same failure and are folded together."""
    r = item.result
    if item.status == "error":
        tail = (r.traceback or r.error or "").strip().splitlines()
        return ("error", r.error_kind, tail[-1] if tail else "")
    if item.status == "wrong" and not (r.answer or "").strip():
        return ("empty", tuple(c.tool for c in harness_calls(r)))
    return None


def harness_calls(r: ProblemResult) -> list[ToolCall]:
    """The calls the harness made: its trace without the judge metric's own calls."""
    return [c for c in r.calls if c.tool != JUDGE_OP]


def _fold(items: list[Item]) -> list[list[Item]]:
    groups: list[list[Item]] = []
    index: dict[tuple, list[Item]] = {}
    for item in items:
        sig = _signature(item)
        if sig is not None and sig in index:
            index[sig].append(item)
            continue
        group = [item]
        groups.append(group)
        if sig is not None:
            index[sig] = group
    return groups


def _show_result(call: ToolCall, limit: int) -> str:
    res = call.result
    if call.error:
        return f"ERROR {trim(call.error, limit)}"
    if call.tool == "search" and isinstance(res, list):
        each = max(limit // max(len(res), 1), 24)
        shown = "; ".join(f"[{_field(p, 'title', '?')}] {trim(_field(p, 'text', ''), each)}" for p in res)
        return f"{len(res)} passages: {trim(shown, limit)}"
    if call.tool == "python" and (isinstance(res, dict) or hasattr(res, "stdout")):
        out, err = _field(res, "stdout", ""), _field(res, "error")
        return f"stdout {trim(out, limit)!r}" + (f" error {trim(err, limit)!r}" if err else "")
    return repr(trim(res, limit)) if isinstance(res, str) else trim(res, limit)


def _show_args(args: object, limit: int) -> str:
    if not isinstance(args, dict):
        return trim(args, limit)
    parts = []
    for key, value in args.items():
        if isinstance(value, list) and value and isinstance(value[-1], dict) and "content" in value[-1]:
            value = f"[{len(value)} messages] last: {value[-1].get('content', '')}"
        if isinstance(value, str):
            parts.append(f"{key}={trim(value, limit)!r}")
        else:
            parts.append(f"{key}={trim(json.dumps(value, ensure_ascii=False, default=str), limit)}")
    return ", ".join(parts)


def _calls(r: ProblemResult, d: Detail) -> list[str]:
    calls = list(r.calls)
    if not calls or d.max_calls == 0:
        return [f"Calls: {len(calls)} (not shown)"] if calls else []
    keep = calls if d.max_calls is None else calls[-d.max_calls:]
    first = len(calls) - len(keep)
    lines = [f"Calls ({len(calls)}" + (f", last {len(keep)} shown" if first else "") + "):"]
    for no, call in enumerate(keep, first + 1):
        lines.append(f"  {no}. {_show_call(call, d)} -> {_show_result(call, d.result_chars)}")
    return lines


def _show_call(call: ToolCall, d: Detail) -> str:
    """`llm(...)`, or a user tool as the harness wrote it: `tools.call('name', arg=...)`."""
    args = call.args if isinstance(call.args, dict) else {}
    if call.tool == "tool" and isinstance(args.get("args"), dict):
        inner = _show_args(args["args"], d.arg_chars)
        return f"tools.call({args.get('name')!r}" + (f", {inner})" if inner else ")")
    return f"{call.tool}({_show_args(call.args, d.arg_chars)})"


def trim_traceback(tb: str, frames: int) -> list[str]:
    """The exception line(s) and the last `frames` frames."""
    lines = tb.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
    if not starts:
        return lines[-3:]
    end_frames = starts[-1] + 1
    while end_frames < len(lines) and lines[end_frames].startswith("    "):
        end_frames += 1
    tail = lines[end_frames:]
    if frames <= 0:
        return tail[-2:]
    kept = lines[starts[max(len(starts) - frames, 0)]:end_frames]
    skipped = max(len(starts) - frames, 0)
    return ([f"  ... {skipped} earlier frames"] if skipped else []) + kept + tail


def _question(item: Item, d: Detail) -> list[str]:
    p = item.problem
    lines = [f"Question: {trim(p.question, d.field_chars)}", f"Gold: {trim(gold_text(p), d.field_chars)}"]
    titles = gold_titles(p)
    if titles:
        lines.append(f"Gold supporting titles: {trim('; '.join(titles), d.field_chars)}")
    return lines


def _prediction(item: Item, d: Detail) -> list[str]:
    r = item.result
    pred = "(no answer)" if r.answer is None else repr(trim(r.answer, d.field_chars))
    lines = [f"Prediction: {pred}"]
    if r.feedback:  # quoted like the prediction: a metric's text (maybe a model's) is data
        lines.append(f"Metric feedback: {trim(r.feedback, max(d.field_chars, 200))!r}")
    return lines


def _one_line(item: Item, d: Detail) -> str:
    r = item.result
    pred = "(no answer)" if r.answer is None else repr(trim(r.answer, d.field_chars))
    return (f"  - {item.problem.id} | Q: {trim(item.problem.question, d.field_chars)} | "
            f"gold: {trim(gold_text(item.problem), d.field_chars)} | predicted: {pred}")


def _header(item: Item, count: int, labels: bool) -> str:
    r = item.result
    fold = f"[x{count}] " if count > 1 else ""
    kind = f" ({r.error_kind})" if r.error_kind else ""
    score = "-" if r.score is None else f"{r.score:.2f}"
    cause = f" | likely cause: {item.cause}" if labels and item.cause else ""
    return f"### {fold}{item.problem.id} | {item.status}{kind} | score {score}{cause}"


def _render_group(group: list[Item], d: Detail, labels: bool) -> list[str]:
    head = group[0]
    r = head.result
    full = head.status != "correct" or d.correct_traces
    lines = _prediction(head, d)  # what the run produced: quoted below as one data block
    if full:
        if r.error and not r.traceback:
            lines.append(f"Error: {trim(r.error, max(d.result_chars, 200))}")
        docs = documents_read(r)
        if d.documents and docs:
            titles = gold_titles(head.problem)
            found = f" (gold found {len(set(titles) & set(docs))}/{len(titles)})" if titles else ""
            lines.append(f"Documents read{found}: {trim('; '.join(docs), 4 * d.arg_chars)}")
        lines += _calls(r, d)
        if r.traceback:
            lines.append("Traceback (last frames):")
            lines += ["  " + x.rstrip()[:300] for x in trim_traceback(r.traceback, d.tb_frames)]
    if len(group) > 1:
        lines.append(f"Same failure on {len(group) - 1} more problem(s):")
        lines += [_one_line(item, d) for item in group[1:]]
    return [_header(head, len(group), labels), *_question(head, d), *data_block(lines)]


def _summary(items: list[Item], result: EvalResult, title: str) -> list[str]:
    counts = {s: sum(i.status == s for i in items) for s in ORDER}
    done = sum(i.result.completed for i in items)
    parts = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return [f"{REPORT_TITLE}{title}: {len(items)} problems",
            f"Mean score {result.mean_score:.3f}; {parts}; {done}/{len(items)} runs completed."]


def _render(items: list[Item], groups: list[list[Item]], result: EvalResult, d: Detail,
            labels: bool, feedback: Sequence[str], title: str) -> str:
    lines = _summary(items, result, title)
    correct_ids = []
    for group in groups:
        head = group[0]
        if head.status == "unscored":
            continue
        if head.status == "correct" and not d.correct_lines:
            correct_ids.append(head.problem.id)
            continue
        lines += ["", *_render_group(group, d, labels)]
    if correct_ids:
        lines += ["", f"Correct: {', '.join(correct_ids)}"]
    unscored = [i for i in items if i.status == "unscored"]
    if unscored:
        lines += ["", "Not scored (infrastructure or budget, not the harness's doing):", *data_block(
            ["; ".join(f"{i.problem.id} ({i.result.error_kind}: {trim(i.result.error or '', 80)})"
                       for i in unscored)])]
    if feedback:
        lines += ["", "## Reviewer notes", *(f"- {trim(f, 1000)}" for f in feedback)]
    return "\n".join(lines) + "\n"


def build_report(
    task: Task | None,
    problems: Sequence[Problem],
    result: EvalResult,
    *,
    budget_chars: int = 12_000,
    human_feedback: Sequence[str] = (),
    label_causes: bool = True,
) -> str:
    """The report for one evaluation of the current harness on feedback problems. `task` is
    only read for its name (None is fine); gold comes from each problem."""
    by_id = {p.id: p for p in problems}
    missing = [r.problem_id for r in result.results if r.problem_id not in by_id]
    if missing:
        raise ValueError(f"results for problems not given to build_report: {', '.join(missing[:5])}")
    items = [Item(by_id[r.problem_id], r, _status(r)) for r in result.results]
    for item in items:
        if item.status in ("error", "wrong", "partial"):
            item.cause = likely_cause(item)
    items.sort(key=lambda i: ORDER.index(i.status))
    groups = _fold(items)
    name = getattr(task, "name", None)
    title = f" ({name})" if name else ""
    text = ""
    for detail in LADDER:
        text = _render(items, groups, result, detail, label_causes, human_feedback, title)
        if len(text) <= budget_chars:
            break
    return text
