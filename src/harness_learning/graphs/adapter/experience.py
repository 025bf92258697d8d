"""A run's judged changes as experience-library entries (`harnesses.experience`).

One entry per judged change: an operator's (its block by name), a past change's (the entry it
was applied from: `experience:ID`), or any other candidate's, read off the diff between its
parent's and its own source. Each carries one outcome: the run, round, candidate and task; the
task's description and the failure signature of the report the round's Proposer read (the
parent's feedback results: error kinds, likely causes, metric feedback); the verdict, its
selection scores against its parent's and, where `eval` measured both, its held-out gain.
Refused repeats and proposals never judged are no new candidates and are left out.

Everything written is redacted (`harnesses.experience.redact`) against every question and gold
answer of the run's task, both splits, the run's split secret and credentials in the
environment, so entries are safe to share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness_learning.evals.judge import DUPLICATE
from harness_learning.evals.problem import Problem
from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.execution_report import Item, _status, likely_cause
from harness_learning.graphs.adapter.run_memory import Tried, tried_before
from harness_learning.harnesses.edits import parse_and_apply
from harness_learning.harnesses.experience import EDIT, OPERATOR, Entry, Library, Outcome, Signature
from harness_learning.harnesses.experience.entry import (
    change_blocks,
    edit_id,
    operator_id,
    unified_diff,
)
from harness_learning.harnesses.experience.redact import Redactor, environment_secrets
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import LogStore, Proposal

EXPERIENCE_PREFIX = "experience:"
CANDIDATE_EVENT = "experience_candidate"
"""Logged when a candidate is made from a library entry: its proposal id and the entry."""
SHOWN_EVENT = "experience_shown"
"""Logged when a Proposer prompt shows past successes: its proposal id and their entry ids."""
PLAN_EVENT = "experience_plan"
"""Logged when the learned choice leaves arms out of a round: {"round", "bar", "tried",
"left_out": {arm: its posterior mean}}."""
FEEDBACK_LINES, FEEDBACK_CHARS = 3, 160


def failure_signature(problems: dict[str, Problem], results: Iterable[ProblemResult]
                      ) -> Signature:
    """What a report on `results` says is failing: each error kind (`wrong` for a scored
    answer below 1) with its count, the likely causes the report labels, most frequent first,
    and the first distinct metric feedback lines."""
    kinds: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    feedback: list[str] = []
    for r in results:
        status = _status(r)
        if status == "correct":
            continue
        kinds[str(r.error_kind) if r.error_kind else status] += 1
        if r.problem_id in problems:
            causes[likely_cause(Item(problems[r.problem_id], r, status))] += 1
        line = " ".join((r.feedback or "").split())[:FEEDBACK_CHARS]
        if line and line not in feedback and len(feedback) < FEEDBACK_LINES:
            feedback.append(line)
    return Signature(tuple(sorted(kinds.items(), key=lambda kc: (-kc[1], kc[0]))),
                     tuple(c for c, _ in sorted(causes.items(), key=lambda kc: (-kc[1], kc[0]))),
                     tuple(feedback))


def held_texts(task: Task, config: AdaptConfig) -> list[str]:
    """Every question and gold answer of the task's splits, the run's split secret and
    credential-looking environment values. A question is the `question` input (every input
    when there is none); a gold answer its `answer` (with any aliases) when the gold is a
    record holding one, such as reasoning-gym's, whose other fields (the dataset's name, its
    generator's settings) are no answer; else every string in the gold."""
    out: list[str] = []
    for split in (task.dev, task.test):
        for problem in split():
            inputs = problem.inputs or {}
            out.extend(_strings(inputs.get("question", inputs)))
            gold = problem.gold
            out.extend(_strings(gold["answer"] if isinstance(gold, dict) and "answer" in gold
                                else gold))
    secret = (getattr(config, "task_options", None) or {}).get("split_secret")
    return out + ([str(secret)] if secret else []) + environment_secrets()


def _strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple | set):
        return [s for v in value for s in _strings(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def extract(store: LogStore, task: Task, config: AdaptConfig) -> list[Entry]:
    """The run's judged changes as redacted entries (one per change: a change the run tried
    twice is one entry with two outcomes)."""
    run = store.get_run()
    run_id = run.run_id if run is not None else str(config.run_dir)
    problems = {p.id: p for p in task.dev()}
    feedback, tests = _evaluations(store)
    tried = {(t.round, t.index): t for t in tried_before(store, 10**9)}
    made = {e.payload.get("proposal_id"): e.payload
            for e in store.iter_events(kinds=[CANDIDATE_EVENT])}
    sources: dict[str, str | None] = {}
    entries: dict[str, Entry] = {}
    for p in store.iter_proposals():
        t = tried.get((p.round, _index(p)))
        if t is None or p.invalid_kind == DUPLICATE:
            continue
        entry = _change(p, t, made.get(p.id), lambda sha: _source(store, sha, sources))
        if entry is None:
            continue
        signature = failure_signature(problems, feedback.get((p.parent_sha, p.round), []))
        outcome = Outcome(run_id, p.round, t.index, str(config.task), task.description,
                          signature, t.outcome, p.invalid_kind, p.parent_score,
                          p.selection_score, _held_out_gain(tests, p))
        entry = Entry(**{**entry.__dict__, "outcomes": (outcome,)})
        entries[entry.id] = entries[entry.id].merged(entry) if entry.id in entries else entry
    redactor = Redactor(held_texts(task, config))
    return [redactor.entry(e) for e in entries.values()]


def _evaluations(store: LogStore) -> tuple[dict, dict]:
    """(sha, round) -> the feedback results; sha -> problem id -> held-out test score."""
    feedback: dict[tuple[str, int], list[ProblemResult]] = {}
    for ev in store.iter_evaluations(purpose="feedback"):
        feedback.setdefault((ev.sha, ev.round), []).append(ev.result)
    tests: dict[str, dict[str, float]] = {}
    for ev in store.iter_evaluations(purpose="test"):
        if ev.result.score is not None:
            tests.setdefault(ev.sha, {})[ev.problem_id] = ev.result.score
    return feedback, tests


def _held_out_gain(tests: dict[str, dict[str, float]], p: Proposal) -> float | None:
    mine, parent = tests.get(p.candidate_sha or ""), tests.get(p.parent_sha or "")
    common = sorted(set(mine or ()) & set(parent or ()))
    if not common:
        return None
    return sum(mine[i] - parent[i] for i in common) / len(common)  # type: ignore[index]


def _index(p: Proposal) -> int:
    tail = p.id.rsplit("-c", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _source(store: LogStore, sha: str | None, cache: dict[str, str | None]) -> str | None:
    if sha and sha not in cache:
        version = store.get_version(sha)
        cache[sha] = version.source if version else None
    return cache.get(sha) if sha else None


def _change(p: Proposal, t: Tried, made: dict | None,
            source: Callable[[str | None], str | None]) -> Entry | None:
    """The change candidate `p` made, without outcomes (None: no change to keep, such as a
    completion with no edit in it)."""
    if made is not None and made.get("entry"):
        blocks = tuple((str(s), str(r)) for s, r in made.get("blocks") or ())
        return Entry(str(made["entry"]), str(made.get("kind") or EDIT), p.origin, t.change,
                     made.get("operator"), blocks, str(made.get("diff") or ""))
    if p.origin.startswith("operator:"):
        name = p.origin.split(":", 1)[1]
        return Entry(operator_id(name), OPERATOR, p.origin, t.change, operator=name)
    parent, child = source(p.parent_sha), source(p.candidate_sha)
    if child is None and parent is not None:
        child = parse_and_apply(parent, p.completion, p.edit_format, p.finish_reason).new_source
    if parent is None or child is None or child == parent:
        return None
    blocks = change_blocks(parent, child)
    return Entry(edit_id(blocks), EDIT, p.origin, t.change, blocks=blocks,
                 diff=unified_diff(parent, child))


def add_run(library: Library, store: LogStore, task: Task, config: AdaptConfig
            ) -> tuple[int, int]:
    """Extract the run and merge it into `library`: (entries written, of them withheld)."""
    entries = extract(store, task, config)
    withheld = sum(1 for e in entries if e.kind == EDIT and not e.blocks)
    return library.add(entries), withheld


def shown_ids(store: LogStore) -> dict[str, dict[str, Any]]:
    """Proposal id -> {"from": entry id or None, "shown": [entry ids]}: which library entries
    each candidate came from or was shown."""
    out: dict[str, dict[str, Any]] = {}
    for e in store.iter_events(kinds=[CANDIDATE_EVENT, SHOWN_EVENT]):
        pid = e.payload.get("proposal_id")
        slot = out.setdefault(pid, {"from": None, "shown": []})
        if e.kind == CANDIDATE_EVENT:
            slot["from"] = e.payload.get("entry")
        else:
            slot["shown"] = list(e.payload.get("entries") or [])
    return out


LEFT_OUT_SHOWN = 4
"""At most this many left-out arms a `show` line names (the likeliest first): a grown library
leaves dozens of losing edits out every round."""


def left_out_lines(store: LogStore) -> dict[int, str]:
    """Round -> one line on what its learned choice tried and left out, the likeliest left-out
    arms with their posterior means (rounds that left nothing out log no plan event)."""
    lines = {}
    for e in store.iter_events(kinds=[PLAN_EVENT]):
        p = e.payload
        out = sorted((p.get("left_out") or {}).items(), key=lambda am: -am[1])
        means = ", ".join(f"{short_arm(arm)} ({m:.2f})" for arm, m in out[:LEFT_OUT_SHOWN])
        if len(out) > LEFT_OUT_SHOWN:
            means += f" and {len(out) - LEFT_OUT_SHOWN} more"
        tried = ", ".join(map(short_arm, p.get("tried") or [])) or "nothing"
        lines[int(p.get("round") or 0)] = (f"round {p.get('round')}: tried {tried}; left out, "
                                           f"expected to help below {p.get('bar')}: {means}")
    return lines


def short_arm(arm: str) -> str:
    """An arm as a candidate's origin names it: an entry by its id's first 12 characters."""
    if arm.startswith(EXPERIENCE_PREFIX):
        return EXPERIENCE_PREFIX + arm[len(EXPERIENCE_PREFIX):][:12]
    return arm


def entry_names(ids: Sequence[str]) -> str:
    return ", ".join(i[:12] for i in ids)
