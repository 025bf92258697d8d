"""One entry of an experience library: a judged change, and what it did wherever it was tried.

A change is either a registered operator (its block, applied by `harnesses.edits.operators`)
or an edit: SEARCH/REPLACE blocks read off the diff between the parent's and the candidate's
source (whatever edit format proposed it), so it can be applied again, mechanically, to any
source holding the same lines. Its id is the hash of the normalised change (the operator's
name; the blocks with each line stripped and blank lines dropped), so the same change measured
on several tasks or in several runs is one entry with several outcomes, keyed by (run, round,
candidate, task). Negative results (worse, invalid) are outcomes like any other.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

SCHEMA_VERSION = 1
"""The entry layout this code writes and reads; a library or entry from a newer one is refused
(read-only), never rewritten."""
OPERATOR, EDIT = "operator", "edit"
CONTEXT_LINES = 3
"""At most this many lines of context a block's SEARCH grows by until it is unique."""


@dataclass(frozen=True)
class Signature:
    """What the report that led to a change said was failing: error kinds with counts, the
    likely causes it named, and the metric's feedback lines (all redacted before storing)."""

    error_kinds: tuple[tuple[str, int], ...] = ()
    causes: tuple[str, ...] = ()
    feedback: tuple[str, ...] = ()

    def text(self) -> str:
        """The signature as words, for BM25."""
        kinds = " ".join(f"{kind} " * min(count, 3) for kind, count in self.error_kinds)
        return " ".join([kinds, *self.causes, *self.feedback]).strip()


@dataclass(frozen=True)
class Outcome:
    """One measurement of a change: where (provenance) and what it did."""

    run: str
    round: int
    candidate: int
    task: str
    description: str = ""
    """The task's description, as the Proposer was told it (redacted)."""
    signature: Signature = field(default_factory=Signature)
    verdict: str = "kept"
    """adopted | kept | worse | raced out | invalid."""
    invalid_kind: str | None = None
    parent_score: float | None = None
    score: float | None = None
    held_out_gain: float | None = None
    """Held-out test score against the parent's on the same problems, when `eval` measured
    both; None otherwise."""

    @property
    def key(self) -> tuple[str, int, int, str]:
        return (self.run, self.round, self.candidate, self.task)

    @property
    def selection_gain(self) -> float | None:
        if self.score is None or self.parent_score is None:
            return None
        return self.score - self.parent_score

    @property
    def gain(self) -> float | None:
        """The held-out gain where measured, else the selection gain."""
        return self.held_out_gain if self.held_out_gain is not None else self.selection_gain

    @property
    def success(self) -> bool:
        """Valid and above its parent: a Bernoulli success for the learned choice."""
        return self.verdict != "invalid" and (self.gain or 0.0) > 0

    def context(self) -> str:
        """What BM25 compares: the task's description and the failure signature."""
        return f"{self.description}\n{self.signature.text()}"


@dataclass(frozen=True)
class Entry:
    """A change and its outcomes. `blocks` is empty for an operator, and for an edit whose
    code had to be withheld (it held a question or answer of its run): such an entry still
    counts as evidence but is never applied."""

    id: str
    kind: str
    origin: str
    summary: str
    operator: str | None = None
    blocks: tuple[tuple[str, str], ...] = ()
    diff: str = ""
    outcomes: tuple[Outcome, ...] = ()
    schema: int = SCHEMA_VERSION

    @property
    def short(self) -> str:
        return self.id[:12]

    @property
    def applicable(self) -> bool:
        return self.kind == OPERATOR or bool(self.blocks)

    def merged(self, other: Entry) -> Entry:
        """This entry with `other`'s outcomes added (one per key; `other`'s wins a clash, so a
        re-extracted run with a held-out gain measured since replaces its earlier outcome)."""
        mine = {o.key: o for o in self.outcomes}
        mine.update({o.key: o for o in other.outcomes})
        keep = self if self.applicable or not other.applicable else other
        return replace(keep, outcomes=tuple(sorted(mine.values(), key=lambda o: o.key)))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "origin": self.origin, "summary": self.summary,
                "operator": self.operator, "blocks": [list(b) for b in self.blocks],
                "diff": self.diff, "schema": self.schema,
                "outcomes": [_outcome_dict(o) for o in self.outcomes]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """The entry `to_dict` wrote; `ValueError` naming what is wrong otherwise."""
        if not isinstance(data, dict):
            raise ValueError("an entry must be a JSON object")
        schema = data.get("schema")
        if not isinstance(schema, int) or schema > SCHEMA_VERSION:
            raise ValueError(f"entry schema {schema!r} is newer than this harness-learning "
                             f"reads ({SCHEMA_VERSION}): upgrade to use it")
        try:
            blocks = tuple((str(s), str(r)) for s, r in data.get("blocks") or ())
            outcomes = tuple(_outcome_of(o) for o in data.get("outcomes") or ())
            entry = cls(str(data["id"]), str(data["kind"]), str(data["origin"]),
                        str(data.get("summary", "")), data.get("operator"), blocks,
                        str(data.get("diff", "")), outcomes, schema)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a malformed entry ({type(exc).__name__}: {exc})") from None
        if entry.kind not in (OPERATOR, EDIT):
            raise ValueError(f"unknown entry kind {entry.kind!r}")
        return entry


def _outcome_dict(o: Outcome) -> dict[str, Any]:
    data = {k: getattr(o, k) for k in ("run", "round", "candidate", "task", "description",
                                        "verdict", "invalid_kind", "parent_score", "score",
                                        "held_out_gain")}
    data["selection_gain"] = o.selection_gain
    data["signature"] = {"error_kinds": [list(k) for k in o.signature.error_kinds],
                         "causes": list(o.signature.causes),
                         "feedback": list(o.signature.feedback)}
    return data


def _outcome_of(d: dict[str, Any]) -> Outcome:
    sig = d.get("signature") or {}
    signature = Signature(tuple((str(k), int(n)) for k, n in sig.get("error_kinds") or ()),
                          tuple(map(str, sig.get("causes") or ())),
                          tuple(map(str, sig.get("feedback") or ())))
    return Outcome(str(d["run"]), int(d["round"]), int(d["candidate"]), str(d["task"]),
                   str(d.get("description", "")), signature, str(d.get("verdict", "kept")),
                   d.get("invalid_kind"), _num(d.get("parent_score")), _num(d.get("score")),
                   _num(d.get("held_out_gain")))


def _num(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"a score must be a number, not {value!r}")
    return float(value)


def _hash(kind: str, payload: object) -> str:
    text = json.dumps([kind, payload], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _norm(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def operator_id(name: str) -> str:
    return _hash(OPERATOR, name)


def edit_id(blocks: Sequence[tuple[str, str]]) -> str:
    return _hash(EDIT, [[_norm(s), _norm(r)] for s, r in blocks])


def change_blocks(parent: str, child: str) -> tuple[tuple[str, str], ...]:
    """The SEARCH/REPLACE blocks that turn `parent` into `child`: one per changed run of lines,
    its SEARCH grown by context lines (up to `CONTEXT_LINES` a side) until it is unique in the
    parent, and an insertion anchored on a neighbouring line."""
    a, b = parent.splitlines(), child.splitlines()
    blocks = []
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        for grow in range(CONTEXT_LINES + 1):
            lo, hi = max(0, i1 - grow), min(len(a), i2 + grow)
            if lo == hi:  # an insertion into nothing: anchor on the next line
                hi = min(len(a), hi + 1)
            search = a[lo:hi]
            replaced = a[lo:i1] + b[j1:j2] + a[i2:hi]
            if search and _count(a, search) == 1:
                break
        blocks.append(("\n".join(search), "\n".join(replaced)))
    return tuple(blocks)


def _count(lines: list[str], part: list[str]) -> int:
    n = len(part)
    return sum(1 for i in range(len(lines) - n + 1) if lines[i:i + n] == part)


def unified_diff(parent: str, child: str) -> str:
    """The change as a diff with one line of context, its hunk headers without line numbers
    (they say nothing about the change elsewhere, and a number could spell an answer)."""
    lines = difflib.unified_diff(parent.splitlines(), child.splitlines(), lineterm="", n=1)
    return "\n".join("@@" if line.startswith("@@") else line for line in list(lines)[2:])


def texts(entry: Entry) -> Iterable[str]:
    """Every text an entry holds that a run's content can reach (what redaction must have
    cleaned): its code, summary and each outcome's task, description and signature. Left out:
    the machine-made identifiers (entry id, origin's entry id, run id) and numbers, which a
    one-digit answer matches as a substring whatever they mean."""
    yield from (entry.summary, entry.diff, entry.operator or "")
    for search, repl in entry.blocks:
        yield from (search, repl)
    for o in entry.outcomes:
        yield from (o.task, o.description, o.verdict, o.invalid_kind or "")
        yield from (k for k, _ in o.signature.error_kinds)
        yield from (*o.signature.causes, *o.signature.feedback)
