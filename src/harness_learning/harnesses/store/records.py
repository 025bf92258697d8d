"""The records of the execution log (docs/ARCHITECTURE.md, "The store").

Plain dataclasses: the store persists them, `training/` reads them back. JSON-valued fields hold
JSON-ready Python values (dicts, lists, str, numbers); `to_jsonable` converts dataclasses such as
`ToolCall` and `Passage` on the way in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from harness_learning.harnesses.results import ProblemResult


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


def canonical_json(value: Any) -> str:
    """Key-sorted, ASCII-only JSON: the same value always gives the same text."""
    return json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def prompt_group_id(prompt: Any) -> str:
    """GRPO group key: sha256 of the prompt (a string or a list of chat messages), canonicalised."""
    text = clean_text(prompt) if isinstance(prompt, str) else canonical_json(prompt)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def to_jsonable(value: Any) -> Any:
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


@dataclass
class Proposal:
    """One Proposer sample, created when it is generated and completed as it is judged."""

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
    """What came back, as it came (an operator's candidate as a whole program)."""
    finish_reason: str | None = None
    """The endpoint's reason to stop (`length` marks a cut-off answer)."""
    model: str = ""
    """The Proposer model that wrote it (`operator:NAME` or `merge` for model-free ones)."""
    edit_format: str = ""
    """search_replace, whole_program or function: how `completion` is parsed."""
    parsed_edit: dict[str, Any] | None = None
    """The edit as the judge parsed it (blocks, function, or program), once."""
    candidate_sha: str | None = None
    """The version the edit made, when it applied and was stored."""
    parsed: bool = False
    """An edit of the declared format was found in the completion."""
    applied: bool = False
    """The edit applied to the parent's source."""
    valid: bool = False
    """It passed every check and completed its evaluation, guards included."""
    invalid_kind: str | None = None
    """Why the candidate is invalid, one of `evals.judge.INVALID_KINDS` (None when valid)."""
    invalid_reason: str | None = None
    """`invalid_kind: detail`, for people; code reads `invalid_kind`."""
    completed_fraction: float | None = None
    """Share of its selection problems that ran to an answer."""
    selection_score: float | None = None
    """Mean score on the round's selection problems (0 when a guard flagged it)."""
    parent_score: float | None = None
    """The parent's selection score on the same problems, for the gain."""
    reward: float | None = None
    """The training reward (docs/ARCHITECTURE.md, "Rewards")."""
    reward_parts: dict[str, Any] = field(default_factory=dict)
    """The terms that make up `reward`, and any zeroing kind."""
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
