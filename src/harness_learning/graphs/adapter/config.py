"""Settings of one adaptation run, with the paper's defaults per track."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.harnesses.contract import LINE_LIMIT
from harness_learning.harnesses.edits.edit import EditFormat

Policy = Literal["strict", "best_valid", "racing", "pareto"]
Split = Literal["held_out", "paper"]
Trace = Literal["none", "otel", "langchain"]

TRACK_DEFAULTS: dict[str, dict[str, Any]] = {
    # Paper, reasoning track: 1 candidate x 5 rounds, strict, SEARCH/REPLACE edits.
    "reasoning": {"rounds": 5, "candidates": 1, "policy": "strict",
                  "edit_format": "search_replace", "feedback": 25, "selection": 25},
    # Paper, QA track: 8 candidates x 10 rounds, best_valid, whole programs, 6 + 64 per round.
    "qa": {"rounds": 10, "candidates": 8, "policy": "best_valid",
           "edit_format": "whole_program", "feedback": 6, "selection": 64},
}
HELD_OUT_SIZES: dict[str, dict[str, int]] = {
    # The paper scores the reasoning track on its 25 feedback problems; held out, the 25-problem
    # dev pool is split: 15 scored every round, never shown, and 10 shown a round from the rest.
    "reasoning": {"feedback": 10, "selection": 15},
}


@dataclass(frozen=True)
class Part:
    """A command-line option that sets one key of a structured field (`task_options`,
    `proposer_params`, `budget`): `adapt --dev 40` sets `task_options["n_dev"] = 40`."""

    option: str
    key: str
    type: Any
    help: str


def _opt(default: Any = dataclasses.MISSING, *, help: str, factory: Any = None,
         parts: tuple[Part, ...] = (), flag: str | None = None) -> Any:
    """A field with its help text (TRL style): the one source of `adapt`'s options and docs.
    `flag`: the option's name where it is not the field's (`--harness` sets `seed_harness`)."""
    metadata = {"help": help, "parts": parts, "flag": flag}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class Budget:
    """Spending limits; a run stops cleanly at the first one reached (None = no limit)."""

    solver_calls: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None


@dataclass
class AdaptConfig:
    """Everything that defines a run. Stored in the run directory, so `resume` needs nothing else.
    `harness-learn adapt` has one option per field, generated from the help texts below."""

    task: str = _opt(help="Task: rg:<dataset>, hotpotqa, musique, 2wiki; a data file of your own "
                          "(.jsonl, .json, .csv or a saved `datasets` dir, copied into the run "
                          "directory); module:Class for a class implementing the Task protocol; "
                          "or a name registered under `harness_learning.tasks`.")
    run_dir: str = _opt(help="Run directory (log, versions, checkpoints).")
    task_options: dict[str, Any] = _opt(
        factory=dict, help="The task's options (get_task's keyword arguments).",
        parts=(Part("test", "n_test", int, "Held-out test problems (task's default)."),
               Part("dev", "n_dev", int, "Dev pool size (task's default)."),
               Part("data", "path", Path, "QA dataset file."),
               Part("index", "index_dir", Path, "QA retrieval index directory.")))
    metric: str | None = _opt(None, help="Data-file metric: exact, f1, contains, numeric[:REL_TOL], "
                                         "regex, json, module:function (or file.py:function), "
                                         "judge:MODEL.")
    describe: str | None = _opt(None, help="The Proposer's task description: TEXT or @file "
                                           "(derived from the data and the metric if unset).")
    tools: list[str] = _opt(factory=list, help="Your tool(s), module:attr or file.py:attr "
                            "(repeatable): a LangChain tool, a list, a typed function or a "
                            "factory; or an MCP server's tools: 'mcp:COMMAND ARGS...' (stdio) "
                            "or mcp+http://HOST:PORT/PATH (streamable HTTP). Harnesses call "
                            "them with tools.call(name, ...).")
    index_backend: str | None = _opt(None, help="QA index backend: auto, bm25, chroma, hybrid or "
                                                "rank-bm25.")
    aliases: str | None = _opt(None, help="2Wiki's id_aliases.json (answer aliases of its "
                                          "entities).")
    solver: str = _opt("local", help="Solver model ('local' or litellm string).")
    proposer: str = _opt("local", help="Proposer model.")
    solver_params: dict[str, Any] = _opt(
        factory=lambda: {"temperature": 0.0, "max_tokens": 256},
        help="Sampling parameters of Solver calls, as JSON.")
    proposer_params: dict[str, Any] = _opt(
        factory=lambda: {"temperature": 0.7, "max_tokens": 2048},
        help="Sampling parameters of Proposer calls, as JSON.",
        parts=(Part("proposer_max_tokens", "max_tokens", int, "Proposer completion limit."),))
    proposer_logprobs: bool = _opt(True, help=(
        "Ask the Proposer endpoint for its sampled tokens' log-probs and log them with each "
        "proposal (llama.cpp and vLLM return them), so offline GRPO takes its importance ratio "
        "against the policy that wrote the log; turn off for an endpoint that rejects `logprobs`."))
    rounds: int | None = _opt(None, help="Rounds (track default if unset).")
    candidates: int | None = _opt(None, help="Candidates per round.")
    group_size: int | None = _opt(None, help=(
        "Proposer samples per round from the same prompt, for training data: the first "
        "`candidates` compete for adoption under the policy, the others are judged and logged "
        "only, so every round leaves a GRPO group of this size whatever the policy."))
    policy: Policy | None = _opt(None, help="strict, best_valid, racing or pareto (GEPA's "
                                            "parent selection from the Pareto front).")
    merge: bool = _opt(False, help=(
        "Each round, also try the merge of the two best valid candidates' SEARCH/REPLACE edits "
        "(both applied to the parent), judged and evaluated like a Proposer sample."))
    edit_format: EditFormat | None = _opt(None, help=(
        "search_replace, whole_program, or function (a focused edit: the Proposer rewrites one "
        "node function at a time, in turn over the graph's nodes, from a short prompt)."))
    repair_turns: int = _opt(0, help=(
        "Second chances per Proposer candidate: an unusable answer is shown its error and the "
        "program's closest lines and answered again; one that changes nothing or repeats a "
        "judged version is sampled afresh (a no-op with a note that a copy is refused). 0 "
        "(the paper's protocol) turns both off; so does `group_size` (a GRPO group's samples "
        "must all answer one prompt). The demo uses 1."))
    operators: str = _opt("none", help=(
        "Operator candidates each round, beside the Proposer's: auto (every registered "
        "building block that fits the current harness), none, or names such as "
        "interpreter,vote,verify,plan,rewrite_query,extra_hop,check. Model-free; judged like "
        "any candidate."))
    block_menu: bool = _opt(True, help=(
        "List the building blocks in the Proposer's prompt. Off, the Proposer is told of "
        "none and writes every strategy itself: a trained Proposer's test (operators apply "
        "blocks either way)."))
    operators_per_round: int = _opt(2, help=(
        "At most this many operator candidates a round, in the order given, skipping those "
        "an earlier round already judged on the same version."))
    split: Split | None = _opt(None, help=(
        "held_out (the default): selection problems are fixed for the run and never shown in a "
        "report, so a copied gold gains nothing; paper: the paper's draws (the reasoning track "
        "scores the feedback problems themselves, QA draws both afresh each round)."))
    feedback: int | None = _opt(None, help="Feedback problems per round.")
    selection: int | None = _opt(None, help="Selection problems per round.")
    seed: int = _opt(0, help="Seed of sampling and Proposer samples.")
    seed_harness: str | None = _opt(None, flag="harness", help=(
        "Start harness: a seed name, a harness .py file or its source text (a copy is kept in "
        "the run directory); the task's seed if unset."))
    line_limit: int = _opt(LINE_LIMIT, help="Longest valid harness, in lines.")
    patience: int | None = _opt(None, help="Stop after K rounds without gain.")
    budget: Budget = _opt(
        factory=Budget, help="Spending limits.",
        parts=(Part("max_solver_calls", "solver_calls", int, "Budget: Solver calls."),
               Part("max_tokens", "tokens", int, "Budget: tokens (Solver+Proposer)."),
               Part("max_cost_usd", "cost_usd", float, "Budget: cost in USD.")))
    race: RaceRule = _opt(
        factory=RaceRule,
        help="Policy racing's rule as JSON; default \"keep 4 then 3\" (fractions [0.3125, "
             "0.75, 1], keep [0.5, 0.75]); successive halving: '{\"fractions\": [0.25, 0.5, "
             "1], \"keep\": [0.5]}' (see `bench racing --curve`).")
    concurrency: int = _opt(8, help="Problems in flight per evaluation.")
    report_chars: int = _opt(12_000, help="Size budget of the Proposer's report, in characters.")
    memory_tokens: int = _opt(300, help=(
        "Run memory: the Proposer's prompt lists this run's earlier candidates (change, origin, "
        "outcome, score against the parent), most informative first, within about this many "
        "tokens (estimated as characters / 4; the default suits a 1.5B Proposer). 0 turns it "
        "off."))
    experience: str = _opt("", help=(
        "Experience library (a directory, or postgresql://USER@HOST:PORT/DATABASE: the "
        "schema hl_experience there; made on first use): this run's judged changes are "
        "added at its end, and its search uses the library: past changes that apply to the "
        "current harness become candidates (origin experience:ID), which operators and past "
        "changes a round tries is ranked by their measured effect on similar tasks, and the "
        "Proposer is shown the most relevant past successes. A password in the URL is used by "
        "this process and never stored."))
    experience_shown: int = _opt(2, help=(
        "With --experience: past successes shown to the Proposer as worked diffs with their "
        "measured gain (0: none)."))
    experience_tokens: int = _opt(400, help=(
        "With --experience: the past successes' share of the Proposer's prompt, in tokens "
        "(characters / 4)."))
    approval: bool = _opt(False, help="Ask before adopting a candidate.")
    trace: Trace = _opt("none", help=(
        "otel: the adaptation's own OpenTelemetry spans (a span per round, per node run, per "
        "candidate with its verdict, per Solver and Proposer call with tokens and cost), sent "
        "to the tracer provider your code sets, else to OTEL_TRACES_EXPORTER (console or "
        "otlp). langchain: each Solver and Proposer call as a chat-model run of its node's "
        "LangChain callbacks (LangSmith with LANGSMITH_TRACING=true). "
        "HARNESS_LEARNING_TRACE=MODE sets it for any run."))
    store: str = _opt("", help=(
        "Where the execution log is kept: empty or `sqlite` for log.sqlite in the run "
        "directory; postgresql://USER@HOST:PORT/DATABASE for a PostgreSQL database (a schema "
        "per run; needs the `postgres` extra). A password in the URL is used by this command "
        "and never stored; later commands take --store URL again (a run directory's URL alone "
        "is never connected to), with the password in it or ?passfile=PATH (PGPASSWORD and "
        "~/.pgpass are not read)."))

    def __post_init__(self) -> None:
        """A store or library URL is checked, and kept without its password (remembered in
        this process only), so config.json never holds one."""
        from harness_learning.harnesses.store.pgurl import check_url, remember_password

        self.store = remember_password(check_url(self.store)) if self.store else ""
        if self.experience:
            from harness_learning.harnesses.experience import check_location

            self.experience = check_location(self.experience)

    def with_track_defaults(self, track: str) -> AdaptConfig:
        """Fill every unset (None) knob from the paper's defaults for `track` (its problem
        counts resized for the held-out split, which the paper does not use)."""
        if self.group_size is not None and self.group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {self.group_size} (it counts "
                             "the Proposer samples per round, candidates included)")
        values = asdict(self)
        if values.get("split") is None:
            values["split"] = "held_out"
        sizes = HELD_OUT_SIZES.get(track, {}) if values["split"] == "held_out" else {}
        for key, default in {**TRACK_DEFAULTS[track], **sizes}.items():
            if values.get(key) is None:
                values[key] = default
        values["budget"] = Budget(**values["budget"])
        values["race"] = RaceRule.from_dict(values["race"])
        return AdaptConfig(**values)

    @property
    def second_chance_turns(self) -> int:
        """`repair_turns`, except in a run that collects GRPO groups (`group_size`): every
        sample of a group must answer the one prompt, and a repair answers another."""
        return 0 if self.group_size is not None else self.repair_turns

    @property
    def samples_per_round(self) -> int:
        """Proposer samples drawn each round: the candidates plus any training-only ones."""
        return max(self.candidates or 1, self.group_size or 0)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdaptConfig:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdaptConfig:
        data = dict(data)
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
