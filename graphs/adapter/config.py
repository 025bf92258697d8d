"""Settings of one adaptation run, with the paper's defaults per track."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.harnesses.contract import LINE_LIMIT

Policy = Literal["strict", "best_valid", "racing"]
EditFormat = Literal["search_replace", "whole_program"]

TRACK_DEFAULTS: dict[str, dict[str, Any]] = {
    # Paper, reasoning track: 1 candidate x 5 rounds, strict, SEARCH/REPLACE edits.
    "reasoning": {"rounds": 5, "candidates": 1, "policy": "strict",
                  "edit_format": "search_replace", "feedback": 25, "selection": 25},
    # Paper, QA track: 8 candidates x 10 rounds, best_valid, whole programs, 6 + 64 per round.
    "qa": {"rounds": 10, "candidates": 8, "policy": "best_valid",
           "edit_format": "whole_program", "feedback": 6, "selection": 64},
}


@dataclass
class Budget:
    """Spending limits; a run stops cleanly at the first one reached (None = no limit)."""

    solver_calls: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None


@dataclass
class AdaptConfig:
    """Everything that defines a run. Stored in the run directory, so `resume` needs nothing else."""

    task: str
    """Task: rg:<dataset>, hotpotqa, musique, 2wiki; a data file of your own (.jsonl, .json,
    .csv or a saved `datasets` directory, copied into the run directory); module:Class for a
    class implementing the Task protocol; or a name registered under `harness_learning.tasks`."""
    run_dir: str
    task_options: dict[str, Any] = field(default_factory=dict)
    metric: str | None = None
    """How a data-file task scores answers: exact, f1, contains, numeric[:REL_TOL], regex,
    json, module:function (or file.py:function), judge:MODEL."""
    describe: str | None = None
    """The Proposer's description of the task (text, or @file); derived from the data's
    fields and the metric when unset."""
    tools: list[str] = field(default_factory=list)
    """Your own tools as module:attr or file.py:attr (a LangChain tool, a list of them, a typed
    function, or a factory returning those); harnesses call them with tools.call(name, ...)."""
    index_backend: str | None = None
    """Retrieval index backend of a QA task: auto, bm25, chroma, hybrid or rank-bm25."""
    aliases: str | None = None
    """2Wiki's id_aliases.json (answer aliases of its entities)."""
    solver: str = "local"
    proposer: str = "local"
    solver_params: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.0, "max_tokens": 256})
    proposer_params: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.7, "max_tokens": 2048})
    proposer_logprobs: bool = True
    """Ask the Proposer endpoint for its sampled tokens' log-probs and log them with each
    proposal (llama.cpp and vLLM return them), so offline GRPO takes its importance ratio
    against the policy that wrote the log; turn off for an endpoint that rejects `logprobs`."""
    rounds: int | None = None
    candidates: int | None = None
    group_size: int | None = None
    """Proposer samples per round from the same prompt, for training data: the first
    `candidates` compete for adoption under the policy, the others are judged (evaluated on
    the selection problems, rewarded) and logged only, so every round leaves a GRPO group of
    this size whatever the policy. Unset or below `candidates`: just the candidates."""
    policy: Policy | None = None
    edit_format: EditFormat | None = None
    feedback: int | None = None
    selection: int | None = None
    seed: int = 0
    seed_harness: str | None = None
    """The start harness: a seed name, a harness .py file or its source text (a copy is kept in
    the run directory); the task's seed when unset."""
    line_limit: int = LINE_LIMIT
    patience: int | None = None
    """Stop after this many rounds without a gain in selection score."""
    budget: Budget = field(default_factory=Budget)
    race: RaceRule = field(default_factory=RaceRule)
    """Stages and stopping rule of policy "racing" (the call/P(best) trade-off)."""
    concurrency: int = 8
    """Problems in flight per evaluation."""
    report_chars: int = 12_000
    approval: bool = False
    """Interrupt before adopting a candidate, for a person to approve or reject it."""

    def with_track_defaults(self, track: str) -> AdaptConfig:
        """Fill every unset (None) knob from the paper's defaults for `track`."""
        if self.group_size is not None and self.group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {self.group_size} (it counts "
                             "the Proposer samples per round, candidates included)")
        values = asdict(self)
        for key, default in TRACK_DEFAULTS[track].items():
            if values.get(key) is None:
                values[key] = default
        values["budget"] = Budget(**values["budget"])
        values["race"] = RaceRule.from_dict(values["race"])
        return AdaptConfig(**values)

    @property
    def samples_per_round(self) -> int:
        """Proposer samples drawn each round: the candidates plus any training-only ones."""
        return max(self.candidates or 1, self.group_size or 0)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdaptConfig:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"run config has unknown keys {sorted(unknown)}: written by another version?")
        data["budget"] = Budget(**data.get("budget", {}))
        data["race"] = RaceRule.from_dict(data.get("race", {}))
        return cls(**data)

    @property
    def path(self) -> Path:
        return Path(self.run_dir)
