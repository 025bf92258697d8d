"""Settings of one adaptation run, with the paper's defaults per track.

`AdaptConfig` is the one settings model: each field's description is its help, and its
validation (ranges, choices, which values are paths) is declared on it. `harness-learn adapt`'s
flags (`cli.options`), the settings file (`adapt --config`, `graphs.adapter.config_file`)
and Studio's settings form (`graphs.adapter.context_schema`, `AdaptConfig.partial`) are generated
from it, and one error format serves all three (`config_file.setting_error`). A setting has
one name everywhere: the start harness is `harness` (flag, key, form field; `seed_harness`,
the name config.json stores it under, is read as the same setting)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning.graphs.adapter.setting_kinds import (
    AtFile,
    FileRef,
    FileRefs,
    HarnessRef,
    OptionPaths,
    Part,
    Parts,
    RelativePath,
    setting,
    setting_name_of,
)
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




def _group_size(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise ValueError(f"group_size must be at least 1, got {value} (it counts the Proposer "
                         "samples per round, candidates included)")
    return value


def _store(value: str) -> str:
    """A store URL is checked, and kept without its password (remembered in this process
    only), so config.json never holds one."""
    from harness_learning.harnesses.store.pgurl import check_url, remember_password

    return remember_password(check_url(value)) if value else ""


def _library(value: str) -> str:
    """A library URL is checked, and kept without its password, like the store's."""
    if not value:
        return value
    from harness_learning.harnesses.experience import check_location

    return check_location(value)


class Budget(BaseModel):
    """Spending limits; a run stops cleanly at the first one reached (None = no limit)."""

    model_config = ConfigDict(extra="forbid")

    solver_calls: int | None = Field(None, ge=0, description="Solver calls.")
    tokens: int | None = Field(None, ge=0, description="Tokens (Solver+Proposer).")
    cost_usd: float | None = Field(None, ge=0, description="Cost in USD.")


class AdaptConfig(BaseModel):
    """Everything that defines a run. Stored in the run directory, so `resume` needs nothing else.
    `harness-learn adapt` has one option per field, generated from the help texts below."""

    model_config = ConfigDict(extra="forbid", title="Adaptation settings")

    task: Annotated[str, FileRef] = setting(help="Task: rg:<dataset>, hotpotqa, musique, 2wiki; a data file of your own "
                          "(.jsonl, .json, .csv or a saved `datasets` dir, copied into the run "
                          "directory); module:Class for a class implementing the Task protocol; "
                          "or a name registered under `harness_learning.tasks`.")
    run_dir: Annotated[str, RelativePath] = setting(help="Run directory (log, versions, checkpoints).")
    task_options: Annotated[dict[str, Any], OptionPaths, Parts((
        Part("test", "n_test", int, "Held-out test problems (task's default)."),
        Part("dev", "n_dev", int, "Dev pool size (task's default)."),
        Part("data", "path", Path, "QA dataset file."),
        Part("index", "index_dir", Path, "QA retrieval index directory.")))] = setting(
        factory=dict, help="The task's options (get_task's keyword arguments).")
    metric: Annotated[str | None, FileRef] = setting(None, help="Data-file metric: exact, f1, contains, numeric[:REL_TOL], "
                                         "regex, json, module:function (or file.py:function), "
                                         "judge:MODEL.")
    describe: Annotated[str | None, AtFile] = setting(None, help="The Proposer's task description: TEXT or @file "
                                           "(derived from the data and the metric if unset).")
    tools: Annotated[list[str], FileRefs] = setting(factory=list, help="Your tool(s), module:attr or file.py:attr "
                            "(repeatable): a LangChain tool, a list, a typed function or a "
                            "factory; or an MCP server's tools: 'mcp:COMMAND ARGS...' (stdio) "
                            "or mcp+http://HOST:PORT/PATH (streamable HTTP). Harnesses call "
                            "them with tools.call(name, ...).")
    index_backend: str | None = setting(None, help="QA index backend: auto, bm25, chroma, hybrid or "
                                                "rank-bm25.")
    aliases: Annotated[str | None, RelativePath] = setting(None, help="2Wiki's id_aliases.json (answer aliases of its "
                                          "entities).")
    solver: str = setting("local", help="Solver model ('local' or litellm string).")
    proposer: str = setting("local", help="Proposer model.")
    solver_params: dict[str, Any] = setting(
        factory=lambda: {"temperature": 0.0, "max_tokens": 256},
        help="Sampling parameters of Solver calls, as JSON.")
    proposer_params: Annotated[dict[str, Any], Parts((
        Part("proposer_max_tokens", "max_tokens", int, "Proposer completion limit."),))] = setting(
        factory=lambda: {"temperature": 0.7, "max_tokens": 2048},
        help="Sampling parameters of Proposer calls, as JSON.")
    proposer_logprobs: bool = setting(True, help=(
        "Ask the Proposer endpoint for its sampled tokens' log-probs and log them with each "
        "proposal (llama.cpp and vLLM return them), so offline GRPO takes its importance ratio "
        "against the policy that wrote the log; turn off for an endpoint that rejects `logprobs`."))
    proposer_echo_stop: bool = setting(True, help=(
        "Stop a Proposer reply that starts copying the prompt back (at the report's title or a "
        "section heading, which no edit writes): small local models do, for minutes of CPU; "
        "turn off for an endpoint that rejects `stop`. A `stop` in proposer_params wins."))
    rounds: int | None = setting(None, ge=0, help="Rounds (track default if unset).")
    candidates: int | None = setting(None, ge=1, help="Candidates per round.")
    group_size: Annotated[int | None, AfterValidator(_group_size)] = setting(None, help=(
        "Proposer samples per round from the same prompt, for training data: the first "
        "`candidates` compete for adoption under the policy, the others are judged and logged "
        "only, so every round leaves a GRPO group of this size whatever the policy."))
    policy: Policy | None = setting(None, help="strict, best_valid, racing or pareto (GEPA's "
                                            "parent selection from the Pareto front).")
    merge: bool = setting(False, help=(
        "Each round, also try the merge of the two best valid candidates' SEARCH/REPLACE edits "
        "(both applied to the parent), judged and evaluated like a Proposer sample."))
    edit_format: EditFormat | None = setting(None, help=(
        "search_replace, whole_program, or function (a focused edit: the Proposer rewrites one "
        "node function at a time, in turn over the graph's nodes, from a short prompt)."))
    repair_turns: int = setting(0, ge=0, help=(
        "Second chances per Proposer candidate: an unusable answer is shown its error and the "
        "program's closest lines and answered again; one that changes nothing or repeats a "
        "judged version is sampled afresh (a no-op with a note that a copy is refused). 0 "
        "(the paper's protocol) turns both off; so does `group_size` (a GRPO group's samples "
        "must all answer one prompt). The demo uses 1."))
    operators: str = setting("none", help=(
        "Operator candidates each round, beside the Proposer's: auto (every registered "
        "building block that fits the current harness), none, or names such as "
        "interpreter,vote,verify,plan,rewrite_query,extra_hop,check. Model-free; judged like "
        "any candidate."))
    block_menu: bool = setting(True, help=(
        "List the building blocks in the Proposer's prompt. Off, the Proposer is told of "
        "none and writes every strategy itself: a trained Proposer's test (operators apply "
        "blocks either way)."))
    operators_per_round: int = setting(2, ge=0, help=(
        "At most this many operator candidates a round, in the order given, skipping those "
        "an earlier round already judged on the same version."))
    split: Split | None = setting(None, help=(
        "held_out (the default): selection problems are fixed for the run and never shown in a "
        "report, so a copied gold gains nothing; paper: the paper's draws (the reasoning track "
        "scores the feedback problems themselves, QA draws both afresh each round)."))
    feedback: int | None = setting(None, ge=0, help="Feedback problems per round.")
    selection: int | None = setting(None, ge=0, help="Selection problems per round.")
    seed: int = setting(0, help="Seed of sampling and Proposer samples.")
    seed_harness: Annotated[str | None, HarnessRef] = setting(
        None, validation_alias=AliasChoices("harness", "seed_harness"), help=(
        "Start harness: a seed name, a harness .py file or its source text (a copy is kept in "
        "the run directory); the task's seed if unset."))
    line_limit: int = setting(LINE_LIMIT, ge=1, help="Longest valid harness, in lines.")
    patience: int | None = setting(None, ge=0, help="Stop after K rounds without gain.")
    stop_when_perfect: bool = setting(True, help=(
        "Under the strict policy, stop once the version in force scores 1.0, the metric's "
        "maximum, on selection: no later candidate could be adopted. Off: run every round (to "
        "keep collecting candidates, e.g. GRPO groups). Other policies may adopt at equal or "
        "lower scores and always run on."))
    budget: Annotated[Budget, Parts((
        Part("max_solver_calls", "solver_calls", int, "Budget: Solver calls."),
        Part("max_tokens", "tokens", int, "Budget: tokens (Solver+Proposer)."),
        Part("max_cost_usd", "cost_usd", float, "Budget: cost in USD.")))] = setting(
        factory=Budget, help="Spending limits.")
    race: RaceRule = setting(
        factory=RaceRule,
        help="Policy racing's rule as JSON; default \"keep 4 then 3\" (fractions [0.3125, "
             "0.75, 1], keep [0.5, 0.75]); successive halving: '{\"fractions\": [0.25, 0.5, "
             "1], \"keep\": [0.5]}' (see `bench racing --curve`).")
    concurrency: int = setting(8, ge=1, help="Problems in flight per evaluation.")
    report_chars: int = setting(12_000, ge=0, help="Size budget of the Proposer's report, in characters.")
    memory_tokens: int = setting(300, ge=0, help=(
        "Run memory: the Proposer's prompt lists this run's earlier candidates (change, origin, "
        "outcome, score against the parent), most informative first, within about this many "
        "tokens (estimated as characters / 4; the default suits a 1.5B Proposer). 0 turns it "
        "off."))
    experience: Annotated[str, AfterValidator(_library)] = setting("", help=(
        "Experience library (a directory, or postgresql://USER@HOST:PORT/DATABASE: the "
        "schema hl_experience there; made on first use): this run's judged changes are "
        "added at its end, and its search uses the library: past changes that apply to the "
        "current harness become candidates (origin experience:ID), which operators and past "
        "changes a round tries is ranked by their measured effect on similar tasks (one "
        "the evidence says more likely loses than helps is not tried), and the "
        "Proposer is shown the most relevant past successes. A password in the URL is used by "
        "this process and never stored."))
    experience_shown: int = setting(2, ge=0, help=(
        "With --experience: past successes shown to the Proposer as worked diffs with their "
        "measured gain (0: none)."))
    experience_tokens: int = setting(400, ge=0, help=(
        "With --experience: the past successes' share of the Proposer's prompt, in tokens "
        "(characters / 4)."))
    approval: bool = setting(False, help="Ask before adopting a candidate.")
    trace: Trace = setting("none", help=(
        "otel: the adaptation's own OpenTelemetry spans (a span per round, per node run, per "
        "candidate with its verdict, per Solver and Proposer call with tokens and cost), sent "
        "to the tracer provider your code sets, else to OTEL_TRACES_EXPORTER (console or "
        "otlp). langchain: each Solver and Proposer call as a chat-model run of its node's "
        "LangChain callbacks (LangSmith with LANGSMITH_TRACING=true). "
        "HARNESS_LEARNING_TRACE=MODE sets it for any run."))
    store: Annotated[str, AfterValidator(_store)] = setting("", help=(
        "Where the execution log is kept: empty or `sqlite` for log.sqlite in the run "
        "directory; postgresql://USER@HOST:PORT/DATABASE for a PostgreSQL database (a schema "
        "per run; needs the `postgres` extra). A password in the URL is used by this command "
        "and never stored; later commands take --store URL again (a run directory's URL alone "
        "is never connected to), with the password in it or ?passfile=PATH (PGPASSWORD and "
        "~/.pgpass are not read)."))


    def with_track_defaults(self, track: str) -> AdaptConfig:
        """Fill every unset (None) knob from the paper's defaults for `track` (its problem
        counts resized for the held-out split, which the paper does not use)."""
        split = self.split or "held_out"
        sizes = HELD_OUT_SIZES.get(track, {}) if split == "held_out" else {}
        filled = {key: default for key, default in {**TRACK_DEFAULTS[track], **sizes}.items()
                  if getattr(self, key) is None}
        return self.replace(split=split, **filled)

    def replace(self, **changes: object) -> AdaptConfig:
        """A copy with `changes`, validated like any settings (`dataclasses.replace`'s role)."""
        return type(self).model_validate({**dict(self), **changes})

    @classmethod
    def partial(cls) -> type[BaseModel]:
        """The model with every field optional (a settings file, or a Studio thread, may set
        only a few): each field's name is its setting's, its validation and help its own."""
        return _partial(cls)

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
        return json.dumps(self.model_dump(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdaptConfig:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdaptConfig:
        """A stored config (config.json): a key this version lacks is refused, a field added
        since takes its default."""
        unknown = set(data) - set(cls.model_fields)
        if unknown:
            raise ValueError(f"run config has unknown keys {sorted(unknown)}: written by another version?")
        return cls.model_validate(data)

    @property
    def path(self) -> Path:
        return Path(self.run_dir)


def setting_name(name: str) -> str:
    """A field's setting name: its flag, settings-file key and Studio field (`harness` for
    `seed_harness`)."""
    return setting_name_of(name, AdaptConfig.model_fields[name])


@cache
def _partial(cls: type[BaseModel]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        optional = (FieldInfo.merge_field_infos(info, default=None) if info.is_required()
                    else FieldInfo.merge_field_infos(info))
        fields[setting_name(name)] = (info.annotation | None, optional)
    return create_model(f"{cls.__name__}Settings", __config__=ConfigDict(extra="forbid"),
                        **fields)
