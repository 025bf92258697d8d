"""Run memory: what this run already tried, for the Proposer's prompt, and the refusal of repeats.

Each round the Proposer is shown a bounded history of the run's earlier candidates, one line
each: which round and candidate, its origin (proposer, operator:NAME, merge), a mechanical
summary of its change (the functions and constants it changed, from the syntax trees of parent
and candidate; an operator's block by name; no model call), its outcome (adopted, kept: valid
but the parent stayed, worse, raced out, or invalid with its kind) and its selection score
against its parent's ("0.42 -> 0.50"). Only earlier rounds are read, so every sample of a round
sees the same history (one GRPO group), and a resumed round rebuilds it unchanged.

The history lives in the prompt the log already stores with each proposal: `shown_memory` reads
it back for `show` and `report`, so what they print is what the Proposer was given.

A candidate whose source repeats a version judged in an earlier round (`normalised_sha`: equal
up to comments and layout) is refused before the Solver runs (`refuse_repeats`).
"""

from __future__ import annotations

import ast
import copy
import difflib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from harness_learning.evals.judge import DUPLICATE, Outcome, repeated
from harness_learning.harnesses.edits import parse_and_apply
from harness_learning.harnesses.edits.normalise import normalised_sha
from harness_learning.harnesses.store import Decision, LogStore, Proposal
from harness_learning.harnesses.text_safety import data_block

HEADING = "## Earlier candidates of this run"
NOTE = ("(Most informative first. Scores: the parent's selection score -> the candidate's. "
        "A program judged already is refused.)")
CHARS_PER_TOKEN = 4
"""The memory's token estimate: characters / 4, a cheap average for English and code (the
tokenizer is not loaded for it); the budget is a setting, not an exact limit."""
REASON_CHARS = 90
NAMES_SHOWN = 4
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Tried:
    """One earlier candidate as the memory tells it."""

    round: int
    index: int
    origin: str
    change: str
    outcome: str
    """adopted | kept | worse | raced out | invalid."""
    kind: str | None = None
    reason: str | None = None
    parent_score: float | None = None
    score: float | None = None
    repeats: int = 0
    """How often the run saw its invalid kind (set on the line that stands for the kind)."""

    @property
    def gain(self) -> float | None:
        if self.score is None or self.parent_score is None:
            return None
        return self.score - self.parent_score

    def line(self) -> str:
        """`r2 c0 proposer: changed solve (+3/-1 lines) -> worse, 0.500 -> 0.333`."""
        what = self.outcome
        if self.outcome == "invalid":
            reason = " ".join((self.reason or self.kind or "").split())
            reason = reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS - 1] + "…"
            what = f"invalid, {reason}" + (f" (this kind {self.repeats}x)" if self.repeats else "")
        else:
            what += f", {_score(self.parent_score)} -> {_score(self.score)}"
        return f"r{self.round} c{self.index} {self.origin}: {self.change} -> {what}"


def _score(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}"


def ordered(tried: Sequence[Tried]) -> list[Tried]:
    """Most informative first, in four tiers:

    1. adopted candidates, newest first (what moved the run);
    2. other candidates that scored above their parent, largest gain first (ideas that work);
    3. for each invalid kind seen at least twice, its newest candidate, marked with its count,
       the most frequent kind first (a mistake the Proposer keeps making);
    4. the rest (ties, worse, raced out, single or further invalid ones), newest first.

    Ties keep the order (round descending, index ascending), so the order is a pure function
    of the log."""
    newest = sorted(tried, key=lambda t: (-t.round, t.index))
    adopted = [t for t in newest if t.outcome == "adopted"]
    better = sorted((t for t in newest if t.outcome != "adopted" and (t.gain or 0.0) > 0),
                    key=lambda t: -(t.gain or 0.0))
    counts = Counter(t.kind for t in newest if t.outcome == "invalid")
    repeating: list[Tried] = []
    for kind, count in sorted(counts.items(), key=lambda kc: -kc[1]):
        if count >= 2:
            first = next(t for t in newest if t.outcome == "invalid" and t.kind == kind)
            repeating.append(first)
    taken = {id(t) for t in (*adopted, *better, *repeating)}
    marked = [replace(t, repeats=counts[t.kind]) for t in repeating]
    return [*adopted, *better, *marked, *(t for t in newest if id(t) not in taken)]


def within_budget(lines: Sequence[str], tokens: int) -> list[str]:
    """The longest prefix of `lines` whose memory section (heading, note, fenced block) fits
    `tokens` at `CHARS_PER_TOKEN`; [] when not one line fits or `tokens` is 0."""
    kept: list[str] = []
    for line in lines:
        if len(memory_section([*kept, line])) > tokens * CHARS_PER_TOKEN:
            break
        kept.append(line)
    return kept


def memory_section(lines: Sequence[str]) -> str:
    """The prompt section for `lines` ("" for none). The lines hold harness-produced text
    (invalid reasons): they go in one `data_block`, so no line can open a section."""
    if not lines:
        return ""
    return "\n".join([HEADING, NOTE, *data_block(lines)])


def shown_memory(prompt: object) -> list[str]:
    """The memory lines a logged prompt (chat messages or text) showed the Proposer; [] when
    it showed none. Reads the fenced block under `HEADING`."""
    if isinstance(prompt, list):
        prompt = "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    lines = str(prompt or "").split("\n")
    if HEADING not in lines:
        return []
    at = lines.index(HEADING) + 2  # the heading, the note, then the block's opening fence
    if at >= len(lines) or not lines[at].startswith("```"):
        return []
    fence, body = lines[at], []
    for line in lines[at + 1:]:
        if line == fence:
            return body
        body.append(line)
    return []


def run_memory(store: LogStore, round_: int, tokens: int) -> list[str]:
    """The memory lines for round `round_`'s prompt: earlier rounds' candidates, `ordered`,
    cut to `tokens` (0 turns the memory off and reads nothing)."""
    if tokens <= 0 or round_ <= 1:
        return []
    return within_budget([t.line() for t in ordered(tried_before(store, round_))], tokens)


def tried_before(store: LogStore, round_: int) -> list[Tried]:
    """The judged candidates of rounds before `round_`. Left out: refused repeats (not new
    candidates) and proposals never judged (a run stopped mid-round)."""
    decisions = {d.round: d for d in store.iter_decisions()}
    sources: dict[str, str | None] = {}

    def source(sha: str | None) -> str | None:
        if sha and sha not in sources:
            version = store.get_version(sha)
            sources[sha] = version.source if version else None
        return sources.get(sha) if sha else None

    out = []
    for p in store.iter_proposals():
        if p.round >= round_ or p.invalid_kind == DUPLICATE or (
                not p.valid and p.invalid_kind is None):
            continue
        d = decisions.get(p.round)
        out.append(Tried(p.round, _index(p), p.origin, change_summary(p, source),
                         _outcome(p, d), p.invalid_kind, p.invalid_reason, p.parent_score,
                         p.selection_score))
    return out


def _outcome(p: Proposal, decision: Decision | None) -> str:
    if not p.valid:
        return "invalid"
    if (p.reward_parts or {}).get("raced_out"):
        return "raced out"
    if decision is not None and p.candidate_sha == decision.chosen_sha != decision.current_sha:
        return "adopted"
    if p.selection_score is not None and p.parent_score is not None \
            and p.selection_score < p.parent_score:
        return "worse"
    return "kept"


def _index(p: Proposal) -> int:
    tail = p.id.rsplit("-c", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def change_summary(p: Proposal, source: Callable[[str | None], str | None]) -> str:
    """What candidate `p` changed, from its parent's and its own source (`source(sha)`), else
    from its completion re-applied to the parent (deterministic). An operator's change is its
    block's name."""
    if p.origin.startswith("operator:"):
        return f"block {p.origin.split(':', 1)[1]}"
    parent = source(p.parent_sha)
    child = source(p.candidate_sha)
    if child is None and parent is not None:
        child = parse_and_apply(parent, p.completion, p.edit_format, p.finish_reason).new_source
    if parent is None or child is None:
        return "edit not applied"
    return describe_change(parent, child)


def describe_change(parent: str, child: str) -> str:
    """`changed solve, PROMPT; added check (+4/-1 lines)`: the definitions and module-level
    names whose code differs (a function's own body, nested functions counted apart), then the
    line counts. Unparseable code gets the counts alone."""
    added = removed = 0
    for line in difflib.unified_diff(parent.splitlines(), child.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    counts = f"+{added}/-{removed} lines"
    before, after = _units(parent), _units(child)
    if before is None or after is None:
        return counts
    parts = []
    for word, names in (("changed", [n for n in after if n in before and after[n] != before[n]]),
                        ("added", [n for n in after if n not in before]),
                        ("removed", [n for n in before if n not in after])):
        if names:
            more = f" +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
            parts.append(f"{word} {', '.join(names[:NAMES_SHOWN])}{more}")
    return f"{'; '.join(parts) or 'layout only'} ({counts})"


def _units(source: str) -> dict[str, str] | None:
    """Each definition (qualified name) and module-level name, with a dump of its own code;
    None when `source` does not parse, or is too deep to dump (a refused proposal's source can
    be: `harnesses.compiler.MAX_DEPTH`). Imports count as one unit, `imports`."""
    try:
        return _units_of(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _units_of(tree: ast.Module) -> dict[str, str]:
    units: dict[str, str] = {}
    imports = [ast.dump(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    if imports:
        units["imports"] = "".join(imports)
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    units[target.id] = ast.dump(node.value) if node.value else ""
    _defs(tree.body, "", units)
    return units


def _defs(body: Iterable[ast.stmt], prefix: str, units: dict[str, str]) -> None:
    for node in body:
        if isinstance(node, _DEFS):
            name = prefix + node.name
            own = copy.copy(node)
            own.body = [ast.Expr(ast.Constant(n.name)) if isinstance(n, _DEFS) else n
                        for n in node.body]
            units[name] = ast.dump(own)
            _defs(node.body, name + ".", units)


def judged_versions(store: LogStore, round_: int) -> dict[str, tuple[str, int]]:
    """Normalised sha -> (sha, round) of every version stored before round `round_` (the
    seed and every candidate the run judged). Siblings of this round are not in it: they are
    proposed concurrently, and which of two equal ones lands first must not decide which is
    refused."""
    judged: dict[str, tuple[str, int]] = {}
    for version in store.iter_versions():
        if version.round < round_:
            judged.setdefault(normalised_sha(version.source), (version.sha, version.round))
    return judged


def refuse_repeats(outcome: Outcome, judged: dict[str, tuple[str, int]], *, track: str,
                   line_limit: int) -> Outcome:
    """`outcome`, refused (kind `duplicate`, never evaluated) when its new source is, up to
    comments and layout, a version in `judged`."""
    if not outcome.needs_evaluation or outcome.new_source is None:
        return outcome
    seen = judged.get(normalised_sha(outcome.new_source))
    if seen is None:
        return outcome
    sha, round_ = seen
    detail = (f"the same program (up to comments and layout) as version {sha[:12]}, judged "
              f"in round {round_}")
    return repeated(outcome, detail, track=track, line_limit=line_limit)
