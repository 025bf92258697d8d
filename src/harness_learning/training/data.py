"""Datasets from execution logs: groups of proposals that answered the same prompt.

Reads run directories only through the store's reading API (`SQLiteLogStore.iter_proposal_groups`).
A group is every proposal whose prompt (task description + harness code + report) hashes to the
same `group_id`, across all the runs given. Rewards are the ones the adapter logged (computed by
`evals.rewards` per the paper); advantages come from `evals.rewards.group_advantages`.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.evals.rewards import group_advantages
from harness_learning.harnesses.text_safety import for_storage
from harness_learning.training.config import DataConfig

if TYPE_CHECKING:
    from datasets import Dataset

    from harness_learning.harnesses.store import LogStore
    from harness_learning.harnesses.store import Proposal as ProposalRecord

ChatMessages = list[dict[str, str]]
Prompt = str | ChatMessages
"""A logged Proposer prompt: text, or the chat messages it was sent as."""


class LogError(ValueError):
    """A record in an execution log cannot be used; the message names the run and record."""


@dataclass
class Proposal:
    """What training needs of one logged proposal."""

    id: str
    run: str
    group_id: str
    prompt: Prompt
    """Text, or a list of chat messages, as the Proposer was sent it."""
    completion: str
    reward: float
    valid: bool
    finish_reason: str | None = None
    selection_score: float | None = None
    parent_score: float | None = None
    logprobs: list[float] | None = None
    logprob_tokens: list[str] | None = None
    """The endpoint's own tokens for `logprobs` (when it logged them), to check that our
    tokenisation of the completion is the one that was sampled."""
    model: str | None = None
    folded: int = 1


@dataclass
class Group:
    group_id: str
    prompt: Prompt
    proposals: list[Proposal]

    @property
    def rewards(self) -> list[float]:
        return [p.reward for p in self.proposals]


@dataclass
class FilterReport:
    """How many groups and proposals each filter removed (printed by the CLI)."""

    runs: int = 0
    groups_read: int = 0
    proposals_read: int = 0
    unjudged: int = 0
    not_proposer: int = 0
    """Operator and merge candidates: no Proposer sample, so nothing to learn from."""
    duplicates_folded: int = 0
    dropped_small: int = 0
    dropped_flat: int = 0
    groups_kept: int = 0
    proposals_kept: int = 0
    notes: list[str] = field(default_factory=list)


def _get(record: ProposalRecord | dict[str, object], name: str, default: object = None
         ) -> Any:  # the caller checks the value's type
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


def _logprobs(raw: object, where: str) -> tuple[list[float] | None, list[str] | None]:
    """Logged log-probs and, when the log has them, the tokens they belong to."""
    if raw in (None, "", []):
        return None, None
    values = json.loads(raw) if isinstance(raw, str) else raw
    if isinstance(values, dict):  # OpenAI layout: {"content": [{"token", "logprob"}, ...]}
        values = values.get("content") or []
    out = [float(v["logprob"] if isinstance(v, dict) else v) for v in values]
    if not all(math.isfinite(v) and v <= 0 for v in out):
        raise LogError(f"{where}: completion log-probs must be finite and <= 0")
    tokens = [v.get("token") if isinstance(v, dict) else None for v in values]
    if not all(isinstance(t, str) for t in tokens):
        return out, None
    return out, tokens


def _proposal(record: ProposalRecord | dict[str, object], run: str) -> Proposal | None:
    """Training's view of one logged proposal; None when it was never judged (no reward yet,
    e.g. the run stopped mid-round)."""
    pid = str(_get(record, "id"))
    where = f"{run}/log.sqlite: proposal {pid}"
    reward = _get(record, "reward")
    if reward is None:
        return None
    if not isinstance(reward, int | float) or not math.isfinite(reward) or reward < 0:
        raise LogError(f"{where}: reward {reward!r} is not a finite number >= 0 "
                       "(rewards are never negative)")
    for name in ("group_id", "completion"):
        if not isinstance(_get(record, name), str):
            raise LogError(f"{where}: field {name!r} is missing or not text")
    if not isinstance(_get(record, "prompt"), str | list):
        raise LogError(f"{where}: prompt is neither text nor a list of chat messages")
    logprobs, tokens = _logprobs(_get(record, "logprobs"), where)
    # Text a dataset file will hold is `for_storage`d (a prompt by `as_messages`): JSON from the
    # log may decode to a lone surrogate, which no UTF-8 writer takes.
    return Proposal(
        id=pid, run=run, group_id=_get(record, "group_id"), prompt=_get(record, "prompt"),
        completion=for_storage(_get(record, "completion")), reward=float(reward),
        valid=bool(_get(record, "valid", False)), finish_reason=_get(record, "finish_reason"),
        selection_score=_get(record, "selection_score"),
        parent_score=_get(record, "parent_score"),
        logprobs=logprobs, model=_get(record, "model"),
        logprob_tokens=None if tokens is None else [for_storage(t) for t in tokens],
    )


@contextlib.contextmanager
def open_log(run_dir: str | Path) -> Iterator[LogStore]:
    """The log store of a run directory, closed on the way out; a LogError naming the
    directory when it holds no execution log."""
    from harness_learning.harnesses.rundir import RunDir

    run = RunDir(Path(run_dir))
    if not run.has_log():
        raise LogError(f"{run_dir}: no execution log ({RunDir.LOG}) in this run directory")
    with run.open_store(read_only=True) as store:
        yield store


def read_proposals(run_dirs: Sequence[str | Path], report: FilterReport | None = None
                   ) -> list[Proposal]:
    """Every judged proposal of every run, in log order (unjudged ones are counted in
    `report.unjudged`)."""
    out: list[Proposal] = []
    for run_dir in map(Path, run_dirs):
        with open_log(run_dir) as store:
            for group in store.iter_proposal_groups():
                for record in group.proposals:
                    if record.origin != "proposer":
                        if report is not None:
                            report.not_proposer += 1
                        continue
                    proposal = _proposal(record, str(run_dir))
                    if proposal is not None:
                        out.append(proposal)
                    elif report is not None:
                        report.unjudged += 1
    return out


def group_proposals(proposals: Iterable[Proposal]) -> list[Group]:
    """Groups by prompt hash, merged across runs, in first-seen order."""
    groups: dict[str, Group] = {}
    for p in proposals:
        group = groups.setdefault(p.group_id, Group(p.group_id, p.prompt, []))
        if p.prompt != group.prompt:
            raise LogError(f"{p.run}: proposal {p.id} shares group_id {p.group_id[:12]} with a "
                           "different prompt")
        group.proposals.append(p)
    return list(groups.values())


def fold_duplicates(group: Group) -> int:
    """Fold identical completions into one proposal with their mean reward; returns how many
    were folded away."""
    seen: dict[str, Proposal] = {}
    sums: dict[str, float] = {}
    for p in group.proposals:
        key = p.completion.strip()
        if key in seen:
            seen[key].folded += 1
            sums[key] += p.reward
        else:
            seen[key], sums[key] = p, p.reward
    before = len(group.proposals)
    for key, p in seen.items():
        p.reward = sums[key] / p.folded
    group.proposals = list(seen.values())
    return before - len(group.proposals)


def filter_groups(groups: list[Group], config: DataConfig, unjudged: int = 0
                  ) -> tuple[list[Group], FilterReport]:
    """Apply the filters of `config` in order: fold duplicates, minimum size, reward spread."""
    report = FilterReport(groups_read=len(groups), unjudged=unjudged,
                          proposals_read=sum(len(g.proposals) for g in groups))
    kept: list[Group] = []
    small: Counter[int] = Counter()
    flat: Counter[float] = Counter()
    for group in groups:
        if config.fold_duplicates:
            report.duplicates_folded += fold_duplicates(group)
        if len(group.proposals) < config.min_group_size:
            report.dropped_small += 1
            small[len(group.proposals)] += 1
            continue
        if config.drop_flat_groups and max(group.rewards) - min(group.rewards) <= 1e-12:
            report.dropped_flat += 1
            flat[round(group.rewards[0], 4)] += 1
            continue
        kept.append(group)
    report.groups_kept = len(kept)
    report.proposals_kept = sum(len(g.proposals) for g in kept)
    report.notes += drop_notes(small, flat, report, config)
    return kept, report


def drop_notes(small: Counter[int], flat: Counter[float], report: FilterReport,
               config: DataConfig) -> list[str]:
    """Why groups were dropped, in words the data summary prints."""
    notes = []
    if report.unjudged:
        notes.append(f"skipped {report.unjudged} unjudged proposals (the run stopped before "
                     "judging them)")
    if report.duplicates_folded:
        notes.append(f"folded {report.duplicates_folded} identical completions into their "
                     "group's first (mean reward)")
    if small:
        sizes = ", ".join(f"{n} of size {size}" for size, n in sorted(small.items()))
        notes.append(f"dropped {sum(small.values())} groups smaller than --min-group-size "
                     f"{config.min_group_size} ({sizes}): a group needs several samples of one "
                     "prompt; adapt with --group-size K to log K per round whatever the policy")
    if flat:
        rewards = ", ".join(f"{n} all at {r:g}" for r, n in sorted(flat.items()))
        notes.append(f"dropped {sum(flat.values())} groups with no reward spread ({rewards}): "
                     "equal rewards give zero advantages, nothing to learn (--no-drop-flat-groups "
                     "keeps them)")
    return notes


def as_messages(prompt: Prompt) -> ChatMessages:
    """A logged prompt as chat messages: a list (or JSON list) of {role, content} is used as
    is, any other text becomes one user message. Text is `for_storage`d: JSON's `\\ud800`
    decodes to a lone surrogate, which no dataset file can hold."""
    if isinstance(prompt, list):
        return [{"role": for_storage(m["role"]), "content": for_storage(m["content"])}
                for m in prompt]
    text = prompt.strip()
    if text.startswith("["):
        try:
            messages = json.loads(text)
        except json.JSONDecodeError:
            messages = None
        if isinstance(messages, list) and all(
            isinstance(m, dict) and {"role", "content"} <= m.keys() for m in messages
        ):
            return as_messages(messages)
    return [{"role": "user", "content": for_storage(prompt)}]


def grpo_rows(groups: list[Group], scale_by_std: bool = False) -> list[dict[str, Any]]:
    """One row per completion, with its group-relative advantage."""
    rows: list[dict[str, Any]] = []
    for group in groups:
        advantages = group_advantages(group.rewards, scale_by_std=scale_by_std)
        for p, adv in zip(group.proposals, advantages, strict=True):
            rows.append({
                "group_id": group.group_id, "proposal_id": p.id, "run": p.run,
                "prompt": as_messages(group.prompt), "completion": p.completion,
                "finish_reason": p.finish_reason or "", "reward": p.reward,
                "advantage": float(adv), "group_size": len(group.proposals),
                "old_logprobs": p.logprobs or [], "old_tokens": p.logprob_tokens or [],
            })
    return rows


def load_groups(run_dirs: Sequence[str | Path], config: DataConfig
                ) -> tuple[list[Group], FilterReport]:
    first = FilterReport()
    groups = group_proposals(read_proposals(run_dirs, first))
    kept, report = filter_groups(groups, config, unjudged=first.unjudged)
    report.runs = len(run_dirs)
    return kept, report


def named_runs(run_dirs: Sequence[str | Path]) -> str:
    """Run directories as an error names them: all of two, else a count and the first, so that
    the reason after them survives a one-line message."""
    if len(run_dirs) <= 2:
        return ", ".join(map(str, run_dirs))
    return f"{len(run_dirs)} runs ({run_dirs[0]}, ...)"


def grpo_dataset(run_dirs: Sequence[str | Path], config: DataConfig
                 ) -> tuple[Dataset, FilterReport]:
    """The GRPO set as a Hugging Face `datasets.Dataset` (one row per completion)."""
    from datasets import Dataset

    groups, report = load_groups(run_dirs, config)
    if not groups:
        raise LogError(f"no usable groups in {named_runs(run_dirs)}: {report.groups_read} read; "
                       + "; ".join(report.notes or ["no proposals"]))
    return Dataset.from_list(grpo_rows(groups, config.scale_by_std)), report


def is_success(p: Proposal, ties: bool = False) -> bool:
    """A successful edit: valid and scored above its parent on the selection problems (with
    `ties`, at least as high)."""
    if not (p.valid and p.selection_score is not None and p.parent_score is not None):
        return False
    gain = float(p.selection_score) - float(p.parent_score)
    return gain >= 0 if ties else gain > 0


def sft_rows(proposals: Iterable[Proposal], ties: bool = False) -> list[dict[str, Any]]:
    """Conversational prompt/completion rows of successful edits (`is_success`), duplicates
    folded."""
    rows, seen = [], set()
    for p in proposals:
        key = (p.group_id, p.completion.strip())
        if not is_success(p, ties) or key in seen:
            continue
        seen.add(key)
        rows.append({
            "prompt": as_messages(p.prompt),
            "completion": [{"role": "assistant", "content": p.completion}],
            "group_id": p.group_id, "proposal_id": p.id, "run": p.run, "reward": p.reward,
            "gain": float(p.selection_score) - float(p.parent_score),
        })
    return rows
