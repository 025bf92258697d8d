"""A run read back from its log (`run_dir/log.sqlite`) through the store layer, shaped for people:
rounds of candidates with an outcome each, the adopted chain, scores and spend.

Nothing here writes: reading a run (even one that is still going) never changes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_learning.evals.user_failures import UserCodeFailures
from harness_learning.graphs.adapter.experience import left_out_lines, shown_ids
from harness_learning.harnesses.edits import parse_and_apply
from harness_learning.harnesses.edits.candidate import unified_diff
from harness_learning.harnesses.llm.models import short_model
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import (
    ROLLBACK_POLICY,
    Decision,
    Evaluation,
    LineageStep,
    LogStore,
    Proposal,
)
from harness_learning.harnesses.store.spend import (
    PROPOSER_COST_EVENT,
    event_cost,
    solver_spend,
    spend,
)

DIFF_EVENT = "candidate_diff"
"""Event kind under which the adapter logs every candidate's diff (invalid ones included)."""
REVIEWER_REJECTED = "rejected by reviewer"


SPEND_COLUMNS = (("solver calls", "solver_calls"), ("solver tokens", "solver_tokens"),
                 ("solver $", "solver_cost_usd"), ("proposer calls", "proposer_calls"),
                 ("proposer tokens", "proposer_tokens"), ("proposer $", "proposer_cost_usd"),
                 ("$", "cost_usd"))
"""The spend tables' columns (heading, `spent()` key), in `show` and in `report` alike."""


def spend_cell(key: str, spent: dict[str, Any]) -> str:
    """One spend figure as shown: counts with thousands separators, dollars to 4 places."""
    value = spent.get(key, 0) or 0
    return f"${float(value):,.4f}" if key.endswith("cost_usd") else f"{int(value):,}"


class NotARunError(FileNotFoundError):
    """The directory holds no execution log."""


@dataclass
class CandidateRecord:
    proposal: Proposal
    index: int
    outcome: str
    """adopted | rejected | valid | raced out | invalid."""
    reason: str
    diff: str
    results: list[Evaluation] = field(default_factory=list)
    """Its selection evaluations in its round (racing: the problems it reached)."""

    @property
    def id(self) -> str:
        return self.proposal.id

    @property
    def sha(self) -> str | None:
        return self.proposal.candidate_sha

    @property
    def report(self) -> str:
        """What the Proposer was shown: the last user message of its prompt."""
        prompt = self.proposal.prompt
        if isinstance(prompt, str):
            return prompt
        users = [m.get("content", "") for m in prompt or [] if isinstance(m, dict)
                 and m.get("role") == "user"]
        return str(users[-1]) if users else ""

    @property
    def tokens(self) -> int:
        return self.proposal.prompt_tokens + self.proposal.completion_tokens


@dataclass
class RoundRecord:
    round: int
    current_sha: str
    decision: Decision | None
    candidates: list[CandidateRecord]
    feedback: list[Evaluation]
    current_selection: list[Evaluation]
    spend: dict[str, Any]
    """The round's evaluations and proposals in `harnesses.store.spend.KEYS`."""

    @property
    def kind(self) -> str:
        if self.decision is None:
            return "in progress"
        return ROLLBACK_POLICY if self.decision.policy == ROLLBACK_POLICY else "round"

    @property
    def chosen_sha(self) -> str:
        return self.decision.chosen_sha if self.decision else self.current_sha

    @property
    def feedback_score(self) -> float | None:
        return mean_score(self.feedback)

    @property
    def memory(self) -> list[str]:
        """The run memory the round's Proposer was given (`graphs.adapter.run_memory`), read back
        from its logged prompt: every Proposer sample of a round shares it."""
        from harness_learning.graphs.adapter.run_memory import shown_memory

        asked = next((c for c in self.candidates if c.proposal.origin == "proposer"), None)
        return shown_memory(asked.proposal.prompt) if asked else []

    @property
    def current_score(self) -> float | None:
        logged = (self.decision.scores or {}).get("current") if self.decision else None
        return logged if isinstance(logged, int | float) else mean_score(self.current_selection)


@dataclass
class RunRecord:
    run_dir: Path
    run_id: str
    config: dict[str, Any]
    lineage: list[LineageStep]
    rounds: list[RoundRecord]
    test_scores: dict[str, float]
    test_results: dict[str, list[Evaluation]]
    spent: dict[str, Any]
    stop_reason: str | None
    failures: UserCodeFailures = field(default_factory=UserCodeFailures)
    """What the user's own code did wrong over the run's evaluations: problems its metric
    failed on (`metric_error`) and calls to its tools that raised, each with its first message."""
    flags: dict[str, int] = field(default_factory=dict)
    """Evaluated problems per flag the parent's checks set (`harnesses.results.Flag`), e.g.
    `judge_injection`: answers the LLM judge's decoy control caught."""
    experience: dict[str, dict[str, Any]] = field(default_factory=dict)
    """With an experience library: per proposal id, the entry it came from and the entries its
    prompt showed (`graphs.adapter.experience.shown_ids`)."""
    left_out: dict[int, str] = field(default_factory=dict)
    """With an experience library: round -> one line on the arms its learned choice left out,
    with their posterior means (`graphs.adapter.experience.left_out_lines`)."""

    def flag_line(self) -> str:
        """`flagged problems: judge_injection 3`, or "" when nothing was flagged."""
        return ("flagged problems: " + ", ".join(f"{k} {v}" for k, v in sorted(self.flags.items()))
                if self.flags else "")

    @property
    def task(self) -> str:
        return str(self.config.get("task", "?"))

    @property
    def title(self) -> str:
        """Task, models and run: what every plot and page heading names."""
        return f"{self.task} · {self.models} · run {self.run_dir.name}"

    @property
    def log(self) -> str:
        """Where the execution log is: the PostgreSQL URL the run names, or its SQLite file."""
        return str(self.config.get("store") or self.run_dir / RunDir.LOG)

    @property
    def models(self) -> str:
        """The Solver and Proposer by model name (their URLs are in the configuration)."""
        return (f"solver {short_model(self.config.get('solver'))} · proposer "
                f"{short_model(self.config.get('proposer'))}")

    @property
    def current_sha(self) -> str | None:
        return self.lineage[-1].sha if self.lineage else None

    def candidate(self, key: str) -> CandidateRecord:
        """By proposal id (`r1-c0`) or a prefix of its version's sha."""
        every = [c for r in self.rounds for c in r.candidates]
        found = [c for c in every if c.id == key] or [
            c for c in every if c.sha and len(key) >= 6 and c.sha.startswith(key)]
        if not found:
            ids = ", ".join(c.id for c in every) or "none"
            raise KeyError(f"no candidate {key!r} in this run (candidates: {ids})")
        return found[0]


def mean_score(results: list[Evaluation]) -> float | None:
    scores = [e.result.score for e in results if e.result.score is not None]
    return sum(scores) / len(scores) if scores else None


def open_store(run_dir: str | Path, store_url: str | None = None) -> LogStore:
    """The log of an existing run (never a new, empty one), where the run says or at
    `store_url` (a command's `--store`)."""
    run = RunDir(run_dir)
    if not run.has_log():
        raise NotARunError(f"{run.path} holds no {RunDir.LOG} (nor a {RunDir.STORE} naming a "
                           "PostgreSQL log): not a run directory")
    return run.open_store(store_url, read_only=True)


def load_run(run_dir: str | Path, store_url: str | None = None) -> RunRecord:
    """Everything the terminal and HTML reports show, read once."""
    with open_store(run_dir, store_url) as store:
        return read_run(store, Path(run_dir))


def read_run(store: LogStore, run_dir: Path) -> RunRecord:
    meta = store.get_run()
    decisions = {d.round: d for d in store.iter_decisions()}
    proposals = list(store.iter_proposals())
    evaluations = list(store.iter_evaluations())
    diffs = {e.payload.get("proposal_id"): e.payload.get("diff", "")
             for e in store.iter_events(kinds=[DIFF_EVENT])}
    finished = [e.payload for e in store.iter_events(kinds=["run_finished"])]
    proposer_cost: dict[int, float] = {}
    for e in store.iter_events(kinds=[PROPOSER_COST_EVENT]):
        key = int(e.payload.get("round") or 0)
        proposer_cost[key] = proposer_cost.get(key, 0.0) + event_cost(e.payload)
    numbers = sorted({p.round for p in proposals} | set(decisions))
    rounds = [_round(store, n, decisions.get(n), [p for p in proposals if p.round == n],
                     evaluations, diffs, proposer_cost.get(n, 0.0)) for n in numbers]
    tests = {}
    for ev in evaluations:
        if ev.purpose == "test":
            tests.setdefault(ev.sha, []).append(ev)
    return RunRecord(
        run_dir=run_dir, run_id=meta.run_id if meta else "?", config=meta.config if meta else {},
        lineage=store.lineage(), rounds=rounds,
        test_scores={sha: s for sha, evs in tests.items() if (s := mean_score(evs)) is not None},
        test_results=tests, spent=store.spent(),
        failures=UserCodeFailures.of(ev.result for ev in evaluations),
        stop_reason=finished[-1].get("reason") if finished else None,
        flags=flag_counts(evaluations), experience=shown_ids(store),
        left_out=left_out_lines(store))


def flag_counts(evaluations: list[Evaluation]) -> dict[str, int]:
    """How many evaluated problems carry each flag (a problem counts once per flag)."""
    counts: dict[str, int] = {}
    for ev in evaluations:
        for flag in ev.result.flags:
            counts[str(flag)] = counts.get(str(flag), 0) + 1
    return counts


def _round(store: LogStore, number: int, decision: Decision | None, proposals: list[Proposal],
           evaluations: list[Evaluation], diffs: dict[Any, str],
           proposer_cost: float = 0.0) -> RoundRecord:
    current = decision.current_sha if decision else (proposals[0].parent_sha if proposals else "")
    mine = [e for e in evaluations if e.round == number]
    candidates: list[CandidateRecord] = []
    for p in sorted(proposals, key=_index):
        outcome, reason = outcome_of(p, decision)
        twin = next((c for c in candidates if c.outcome == "adopted"), None)
        if outcome == "adopted" and twin is not None:  # an identical edit: one version, one adoption
            outcome, reason = "valid", f"the same version as {twin.id}, which was adopted"
        results = [e for e in mine if e.sha == p.candidate_sha and e.purpose == "selection"]
        diff = diffs.get(p.id)
        candidates.append(CandidateRecord(p, _index(p), outcome, reason,
                                          diff if diff is not None else rebuild_diff(store, p),
                                          results))
    calls, cost = solver_spend(e.result.calls for e in mine)
    spent = spend(solver_calls=calls, solver_tokens=sum(e.result.tokens for e in mine),
                  solver_cost_usd=cost, proposer_calls=len(proposals),
                  proposer_tokens=sum(p.prompt_tokens + p.completion_tokens for p in proposals),
                  proposer_cost_usd=proposer_cost)
    return RoundRecord(number, current or "", decision, candidates,
                       [e for e in mine if e.sha == current and e.purpose == "feedback"],
                       [e for e in mine if e.sha == current and e.purpose == "selection"], spent)


def outcome_of(p: Proposal, decision: Decision | None) -> tuple[str, str]:
    """What became of a candidate, and why, from its proposal and its round's decision."""
    parts = p.reward_parts or {}
    if not p.valid:
        return "invalid", p.invalid_reason or "not judged yet"
    if parts.get("raced_out"):
        return "raced out", str(parts.get("race") or "dropped by the race")
    if decision is None:
        return "valid", "round not decided yet"
    rejected = (decision.scores or {}).get("rejected")
    if decision.reason.startswith(REVIEWER_REJECTED) and rejected in (_index(p), str(_index(p))):
        return "rejected", decision.reason
    if p.candidate_sha == decision.chosen_sha and decision.chosen_sha != decision.current_sha:
        return "adopted", decision.reason
    return "valid", f"not chosen: {decision.reason}"


def rebuild_diff(store: LogStore, p: Proposal) -> str:
    """The diff of a candidate logged before diffs were: from its stored version, else by
    re-applying its logged completion to its parent (deterministic)."""
    parent = store.get_version(p.parent_sha) if p.parent_sha else None
    if parent is None:
        return ""
    child = store.get_version(p.candidate_sha) if p.candidate_sha else None
    if child is not None:
        return unified_diff(parent.source, child.source)
    return parse_and_apply(parent.source, p.completion, p.edit_format, p.finish_reason).diff


def _index(p: Proposal) -> int:
    tail = p.id.rsplit("-c", 1)[-1]
    return int(tail) if tail.isdigit() else 0
