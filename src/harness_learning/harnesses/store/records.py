"""The records of the execution log (docs/ARCHITECTURE.md, "The store").

Plain dataclasses: the store persists them, `training/` reads them back. The judge's `Outcome`
is one of them: a proposal row holds it whole, so the verdict has one shape from the judge to
the log to the graph state. JSON-valued fields hold
JSON-ready Python values (dicts, lists, str, numbers); `to_jsonable` converts dataclasses such as
`ToolCall` and `Passage` on the way in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from harness_learning.harnesses.results import ProblemResult

if TYPE_CHECKING:
    from harness_learning.harnesses.llm.completion import Completion


def clean_text(text: str) -> str:
    """Text SQLite can store: lone surrogates (possible in model output decoded from JSON) become
    U+FFFD instead of failing the write."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def source_sha(source: str) -> str:
    """Content address of a harness version (of its storable text)."""
    return hashlib.sha256(clean_text(source).encode("utf-8")).hexdigest()


def canonical_json(value: object) -> str:
    """Key-sorted, ASCII-only JSON: the same value always gives the same text."""
    return json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def prompt_group_id(prompt: object) -> str:
    """GRPO group key: sha256 of the prompt (a string or a list of chat messages), canonicalised."""
    text = clean_text(prompt) if isinstance(prompt, str) else canonical_json(prompt)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def to_jsonable(value: object) -> Any:
    """Dataclasses, tuples, sets and objects with `to_dict` become plain JSON values."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return to_jsonable(value.to_dict())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return repr(value)


@dataclass
class RunMeta:
    run_id: str
    config: dict[str, Any]
    created_at: float
    schema_version: int


@dataclass
class Version:
    sha: str
    source: str
    parent_sha: str | None = None
    round: int = 0
    note: str = ""
    created_at: float = 0.0


@dataclass(frozen=True)
class Evaluation:
    """One problem's result (the record the evaluator returned, unchanged), keyed by the harness
    version, purpose and round it was run for."""

    run_id: str
    sha: str
    purpose: str
    """feedback | selection | test (or another name the adapter uses)."""
    round: int
    result: ProblemResult
    created_at: float = 0.0

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "run_id", "sha", "purpose", "round", "problem_id", "answer", "score", "error",
        "error_kind", "traceback", "trace", "latency_s", "tokens", "feedback", "refused_by",
        "created_at")
    """The flat form of the record: the SQLite table's columns and the JSONL export's fields."""

    @property
    def problem_id(self) -> str:
        return self.result.problem_id

    def to_row(self) -> dict[str, Any]:
        """The flat form (`COLUMNS`); the result's calls are the `trace`."""
        data = self.result.to_dict()
        data["trace"] = data.pop("calls")
        return {"run_id": self.run_id, "sha": self.sha, "purpose": self.purpose,
                "round": self.round, **data, "created_at": self.created_at}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Evaluation:
        data = dict(row)
        data["calls"] = data.pop("trace", None) or []
        return cls(data["run_id"], data["sha"], data["purpose"], data["round"],
                   ProblemResult.from_dict(data), data.get("created_at") or 0.0)


VIEW_DIFF_CHARS = 4000
"""The longest diff a candidate's view carries (the graph state stays small; the log keeps it
whole)."""


@dataclass(frozen=True)
class Outcome:
    """The judge's verdict on one candidate, from parsing to reward (`evals.judge` makes it):
    the one record the adapter's state shows (`view`) and a proposal row holds
    (`Proposal.outcome`). It lives with the log's records because the log stores it; the
    judge, a layer up, is its only writer."""

    parsed: bool
    applied: bool
    unchanged: bool = False
    valid: bool = False
    invalid_kind: str | None = None
    invalid_reason: str | None = None
    new_source: str | None = None
    """The source the edit made (not stored with a proposal: a version that was stored is
    `candidate_sha` in the versions, and an unstored one is the `edit` applied to the parent)."""
    diff: str = ""
    edit: dict[str, Any] | None = None
    """The parsed edit, JSON-ready."""
    evaluated: bool = False
    completed_fraction: float | None = None
    selection_score: float | None = None
    reward: float = 0.0
    reward_parts: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_evaluation(self) -> bool:
        """Passed every check that needs no run: its evaluation decides the rest."""
        return self.invalid_kind is None and not self.evaluated

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for graph state (a racing draft) and logs."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        return cls(**data)

    def stored(self) -> dict[str, Any]:
        """The form a proposal row holds: `to_dict` without `new_source`."""
        data = self.to_dict()
        del data["new_source"]
        return data

    def view(self) -> dict[str, Any]:
        """What the adapter's graph state (and Studio) shows of the verdict: the verdict fields
        of `graphs.adapter.state.CandidateView`, the diff cut at `VIEW_DIFF_CHARS`."""
        return {"parsed": self.parsed, "applied": self.applied, "valid": self.valid,
                "invalid_kind": self.invalid_kind, "invalid_reason": self.invalid_reason,
                "selection_score": self.selection_score,
                "completed_fraction": self.completed_fraction, "reward": self.reward,
                "diff": self.diff[:VIEW_DIFF_CHARS]}


FLAT_VERDICT = ("parsed_edit", "parsed", "applied", "valid", "invalid_kind", "invalid_reason",
                "completed_fraction", "selection_score", "reward", "reward_parts")
"""The verdict's own columns in a proposal of log schema 3 and older, which `Outcome` replaced."""


def outcome_from_flat(row: dict[str, Any], diff: str = "") -> Outcome | None:
    """The `Outcome` of a proposal written by log schema 3 or older (its verdict in
    `FLAT_VERDICT`, with `diff` from its `candidate_diff` event); None for one never judged:
    a draft had no reward, no validity and no invalid kind."""
    if row.get("reward") is None and not row.get("valid") and not row.get("invalid_kind") \
            and not row.get("invalid_reason"):
        return None
    return Outcome(
        parsed=bool(row.get("parsed")), applied=bool(row.get("applied")),
        unchanged=row.get("invalid_kind") == "unchanged", valid=bool(row.get("valid")),
        invalid_kind=row.get("invalid_kind"), invalid_reason=row.get("invalid_reason"),
        diff=diff, edit=row.get("parsed_edit"),
        evaluated=row.get("completed_fraction") is not None,
        completed_fraction=row.get("completed_fraction"),
        selection_score=row.get("selection_score"), reward=float(row.get("reward") or 0.0),
        reward_parts=dict(row.get("reward_parts") or {}))


@dataclass
class Proposal:
    """One candidate: what was asked and what came back, logged when it is drawn, and the
    judge's `outcome`, set once when it is settled (`ProposalLog.settle_proposal`)."""

    id: str
    """`r{round}-c{index}` (`proposal_id`): the fan-out index is part of the key, so a resumed
    round finds the sample it already drew."""
    round: int
    group_id: str
    """sha256 of the prompt (`prompt_group_id`): the GRPO group every sample of one prompt
    shares."""
    prompt: Any
    """What the Proposer was sent (chat messages), or an operator's one-line note."""
    completion: str
    """What came back, as it came (an operator's candidate as a whole program). Stored here
    only: a Proposer attempt's event names the proposal that kept it instead of repeating it."""
    finish_reason: str | None = None
    """The endpoint's reason to stop (`length` marks a cut-off answer)."""
    model: str = ""
    """The Proposer model that wrote it (`operator:NAME` or `merge` for model-free ones)."""
    edit_format: str = ""
    """search_replace, whole_program or function: how `completion` is parsed."""
    candidate_sha: str | None = None
    """The version the edit made, when it applied and was stored."""
    outcome: Outcome | None = None
    """The judge's verdict (without `new_source`); None until the proposal is settled."""
    parent_score: float | None = None
    """The parent's selection score on the same problems, for the gain."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    """Wall seconds of the Proposer call (0 for a cached or model-free candidate)."""
    logprobs: list[Any] | None = None
    """Per-token log-probabilities, when the endpoint returned them (for GRPO)."""
    parent_sha: str | None = None
    """The version the edit was made to."""
    origin: str = "proposer"
    """Where the candidate came from: `proposer` (the LLM), `operator:NAME` or `merge`."""
    cost_usd: float = 0.0
    """What the Proposer call cost in USD (litellm's price; 0 for local models and operators)."""
    created_at: float = 0.0

    # The verdict as readers of the log have always read it (one name each, from `outcome`).
    @property
    def settled(self) -> bool:
        return self.outcome is not None

    @property
    def parsed(self) -> bool:
        """An edit of the declared format was found in the completion."""
        return self.outcome is not None and self.outcome.parsed

    @property
    def applied(self) -> bool:
        """The edit applied to the parent's source."""
        return self.outcome is not None and self.outcome.applied

    @property
    def valid(self) -> bool:
        """It passed every check and completed its evaluation, guards included."""
        return self.outcome is not None and self.outcome.valid

    @property
    def invalid_kind(self) -> str | None:
        """Why the candidate is invalid, one of `evals.judge.INVALID_KINDS` (None when valid
        or not yet judged)."""
        return self.outcome.invalid_kind if self.outcome else None

    @property
    def invalid_reason(self) -> str | None:
        """`invalid_kind: detail`, for people; code reads `invalid_kind`."""
        return self.outcome.invalid_reason if self.outcome else None

    @property
    def completed_fraction(self) -> float | None:
        """Share of its selection problems that ran to an answer."""
        return self.outcome.completed_fraction if self.outcome else None

    @property
    def selection_score(self) -> float | None:
        """Mean score on the round's selection problems (0 when a guard flagged it)."""
        return self.outcome.selection_score if self.outcome else None

    @property
    def reward(self) -> float | None:
        """The training reward (docs/ARCHITECTURE.md, "Rewards"); None until judged."""
        return self.outcome.reward if self.outcome else None

    @property
    def reward_parts(self) -> dict[str, Any]:
        """The terms that make up `reward`, and any zeroing kind."""
        return self.outcome.reward_parts if self.outcome else {}

    @property
    def parsed_edit(self) -> dict[str, Any] | None:
        """The edit as the judge parsed it (blocks, function, or program), once."""
        return self.outcome.edit if self.outcome else None

    def to_row(self) -> dict[str, Any]:
        """The stored form: the fields, the outcome as `Outcome.stored`."""
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        row["outcome"] = self.outcome.stored() if self.outcome is not None else None
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Proposal:
        """A stored row back; one of log schema 3 or older (its verdict in `FLAT_VERDICT`)
        too, its verdict read by `outcome_from_flat`."""
        data = dict(row)
        if "outcome" not in data and any(name in data for name in FLAT_VERDICT):
            data["outcome"] = outcome_from_flat(data)
        for name in FLAT_VERDICT:
            data.pop(name, None)
        outcome = data.get("outcome")
        if isinstance(outcome, dict):
            data["outcome"] = Outcome.from_dict(outcome)
        return cls(**data)


def new_proposal(round_: int, index: int, messages: object, completion: Completion,
                 edit_format: str, *,
                 parent_sha: str | None = None, origin: str = "proposer",
                 parent_score: float | None = None) -> Proposal:
    """The record of a candidate just drawn (`completion`, a `harnesses.llm.Completion`), not
    yet judged. Its price is the spend family's to record (`SpendLog.record_proposer_cost`)."""
    return Proposal(
        id=proposal_id(round_, index), round=round_, group_id=prompt_group_id(messages),
        prompt=to_jsonable(messages), completion=completion.text,
        finish_reason=completion.finish_reason, model=getattr(completion, "model", ""),
        edit_format=edit_format, parent_score=parent_score,
        prompt_tokens=getattr(completion, "prompt_tokens", 0),
        completion_tokens=getattr(completion, "completion_tokens", 0),
        latency_s=getattr(completion, "latency_s", 0.0),
        logprobs=getattr(completion, "logprobs", None), parent_sha=parent_sha,
        origin=origin, cost_usd=float(getattr(completion, "cost", 0.0) or 0.0))


ROLLBACK_POLICY = "rollback"
"""`Decision.policy` of a rollback: a person made an earlier version current."""


@dataclass
class Decision:
    round: int
    current_sha: str
    chosen_sha: str
    policy: str
    reason: str = ""
    scores: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0


@dataclass
class Event:
    seq: int
    ts: float
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)


class LineageStep(NamedTuple):
    """One round of the adopted chain: the version in force after `round` (0 = the seed)."""

    round: int
    sha: str
    selection_score: float | None


def proposal_id(round: int, index: int) -> str:
    """Deterministic id of candidate `index` of `round`, so a resumed round finds its samples."""
    return f"r{round}-c{index}"


@dataclass
class ProposalGroup:
    """All samples that answered one prompt: the unit GRPO compares."""

    group_id: str
    round: int
    prompt: Any
    proposals: list[Proposal]
