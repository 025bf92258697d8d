"""The budget estimate printed before a run starts: an upper bound on its model calls, their
tokens and their price, for the run as configured (`adapt`, `resume`, the demo's held-out test).

What a run spends, round by round (and what the bound counts for it):
- the current version on the round's feedback problems, and on its selection problems (under
  the held-out split the selection is fixed, so a version's selection results are reused: only
  round 1 pays for the current version's);
- each Proposer sample (training-only ones too), the merge and each operator candidate on the
  selection problems (a race at most `RaceRule.max_problems`), as if every one were valid;
- a valid candidate's memorisation probe (`evals.memorisation`): the shown feedback problems
  the selection lacks and, where the selection holds fewer than `MIN_UNSEEN` unseen ones,
  control problems for it and once for its parent; counted only where the task's report can
  show a gold at all;
- a judge metric (`judge:MODEL`) makes one Solver call per problem scored.
Solver calls per problem come from the seed's source (`llm_calls_per_problem`); an operator
multiplies them as its block does (`OPERATOR_CALLS`), and the versions a round may adopt carry
the most expensive shape forward. Proposer calls: every LLM sample with its second chances.

The bound assumes a Proposer's edit keeps its parent's Solver calls per problem; an edit that
adds a loop can spend more, which the budgets (`--max-solver-calls` ...) stop.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from harness_learning.evals.memorisation import MAX_CONTROL, MIN_UNSEEN
from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.harnesses.compiler import parse_source

LOOP_GUESS = 5
PROMPT_TOKENS_GUESS = 400
PROPOSER_PROMPT_GUESS = 3000

Calls = Callable[[int, int], int]
"""(Solver calls, searches) per problem of a harness -> those of the harness an operator wraps."""
OPERATOR_CALLS: dict[str, Calls] = {  # read off harnesses.blocks.compose
    "interpreter": lambda b, s: 3 + b,  # up to 3 program attempts, then the harness as fallback
    "plan": lambda b, s: 1 + b,
    "verify": lambda b, s: 3 * b + 3,  # the answer and 2 sampled retries, each checked
    "vote": lambda b, s: 5 * b,
    "few_shot": lambda b, s: b,
    "rewrite_query": lambda b, s: b + s,  # one query rewrite per search
    "extra_hop": lambda b, s: b + s,  # one follow-up question per search
    "check": lambda b, s: b + 1,
    "passages": lambda b, s: b + 1,
    "short_answer": lambda b, s: b + 1,
}


def unknown_operator(b: int, s: int) -> int:
    """A user's own operator: its block is not known here."""
    return LOOP_GUESS * b


def call_sites(source: str) -> tuple[int, int]:
    """(Solver calls, searches) one run of `source` makes, statically: each `tools.llm(...)` /
    `tools.search(...)` call site once, all of them `LOOP_GUESS` times when the source loops
    (a `for`/`while`, or conditional edges that may point back)."""
    tree = parse_source(source)
    counts = {"llm": 0, "search": 0}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in counts:
            counts[node.func.attr] += 1
    loops = "add_conditional_edges" in source or any(
        isinstance(n, ast.For | ast.While) for n in ast.walk(tree))
    times = LOOP_GUESS if loops else 1
    return max(1, counts["llm"] * times), counts["search"] * times


def llm_calls_per_problem(source: str) -> int:
    """Static count of Solver calls one run of `source` makes (`call_sites`)."""
    return call_sites(source)[0]


@dataclass
class Estimate:
    rounds: int
    candidates: int
    solver_calls: int
    proposer_calls: int
    tokens: int
    training_only: int = 0
    """Samples per round drawn for training data only (`AdaptConfig.group_size`)."""
    operators: int = 0
    """Operator candidates per round, at most (`AdaptConfig.operators_per_round`)."""
    cost_usd: float | None = 0.0
    """Solver and Proposer at their prices; None when a model has no known price."""
    tested: int = 0
    """Held-out test problems per version the bound includes (the demo's test)."""

    def describe(self) -> str:
        extra = f" (+{self.training_only} for training)" if self.training_only else ""
        extra += f" + {self.operators} operator candidates" if self.operators else ""
        extra += f", then {self.tested} held-out test problems" if self.tested else ""
        dollars = ("$ unknown (no price for a model: add ?price_in=..&price_out=..)"
                   if self.cost_usd is None else f"~${self.cost_usd:,.2f}")
        return (f"budget estimate: {self.rounds} rounds x {self.candidates} candidates{extra} -> "
                f"at most ~{self.solver_calls:,} Solver calls, {self.proposer_calls} Proposer "
                f"calls, ~{self.tokens:,} tokens, {dollars} (upper bound while Proposer edits "
                "keep their parent's Solver calls per problem; cached evaluations are reused)")


@dataclass(frozen=True)
class _Shape:
    """What the bound reads of a run before it starts."""

    calls: int
    searches: int
    probe: int
    """Problems a valid candidate's memorisation probe runs beyond the selection."""
    parent_probe: int
    """Problems the probe runs on the candidate's parent, once per parent version."""
    fixed_selection: bool
    judged: int
    """Solver calls per scored problem the metric makes (a judge metric: 1)."""


def estimate_budget(config: AdaptConfig, seed_source_text: str | None = None,
                    live: dict | None = None, task: Task | None = None,
                    test_problems: int = 0) -> Estimate:
    """`task`: the run's task if it is loaded already (else it is opened here, for its seed;
    given only `seed_source_text`, the task is not opened and the bound assumes nothing of it:
    no memorisation probes, a selection drawn afresh each round). `test_problems`: held-out
    problems the seed and the final version are tested on after the run (the demo's)."""
    from harness_learning.graphs.adapter.inputs import open_task, start_source

    if seed_source_text is None:
        task = task if task is not None else open_task(config, live)
        seed_source_text = start_source(config, task)
    shape = _shape(config, seed_source_text, task)
    solver_calls, final_calls = _solver_calls(config, shape)
    solver_calls += test_problems * (shape.calls + final_calls + 2 * shape.judged)
    proposer_calls = config.rounds * config.samples_per_round * (1 + config.second_chance_turns)
    solver = (solver_calls * PROMPT_TOKENS_GUESS,
              solver_calls * _max_tokens(config.solver, config.solver_params, 256))
    proposer = (proposer_calls * PROPOSER_PROMPT_GUESS,
                proposer_calls * _max_tokens(config.proposer, config.proposer_params, 2048))
    operators = config.operators_per_round if config.operators != "none" else 0
    return Estimate(config.rounds, config.candidates, solver_calls, proposer_calls,
                    sum(solver) + sum(proposer),
                    config.samples_per_round - config.candidates, operators,
                    estimate_cost(config, solver, proposer), test_problems)


def _max_tokens(spec: str, role_params: dict, default: int) -> int:
    """A role's completion cap as its calls send it: the model spec's own (`?max_tokens=`) over
    the run's defaults for the role (see `llm.config.spec_params`)."""
    from harness_learning.harnesses.llm.config import ModelConfig

    try:
        named = ModelConfig.parse(spec).params if spec else {}
    except ValueError:  # a bad spec is refused where the model is opened, not here
        named = {}
    return int({**role_params, **named}.get("max_tokens", default))


def _solver_calls(config: AdaptConfig, shape: _Shape) -> tuple[int, int]:
    """(Solver calls of the run's rounds, calls per problem of the costliest version it can end
    with)."""
    ops = _operator_costs(config)
    k = config.operators_per_round if ops else 0
    feedback, selection = config.feedback or 0, config.selection or 0
    proposed = (config.race.max_problems(config.candidates, selection)
                if config.policy == "racing" else selection * config.candidates)
    proposed += selection * (config.samples_per_round - config.candidates)  # training-only
    llm_samples = config.samples_per_round + (1 if config.merge else 0)
    per, total = shape.calls, 0
    for round_ in range(1, config.rounds + 1):
        scored = feedback + (selection if round_ == 1 or not shape.fixed_selection else 0)
        total += (scored + shape.parent_probe) * (per + shape.judged)
        # Proposer samples and the merge, as if each kept its parent's shape and was valid
        total += (proposed + (selection if config.merge else 0)
                  + llm_samples * shape.probe) * (per + shape.judged)
        # operators: the k costliest of those a round can reach (each round skips the ones
        # an earlier round judged on the same version, so round r reaches r*k of them)
        costs = sorted((cost(per, shape.searches) for cost in ops[:round_ * k]), reverse=True)
        total += sum((selection + shape.probe) * (cost + shape.judged) for cost in costs[:k])
        per = max([per, *costs[:k]])
    return total, per


def _operator_costs(config: AdaptConfig) -> list[Calls]:
    """The cost functions of the run's operators, in the order a round tries them."""
    from harness_learning.harnesses.edits.operators import resolve_operators

    return [OPERATOR_CALLS.get(op.name, unknown_operator) if op.transform is None
            else unknown_operator for op in resolve_operators(config.operators)]


def _shape(config: AdaptConfig, seed_source: str, task: Task | None) -> _Shape:
    from harness_learning.graphs.adapter.few_shot import held_out_in_force

    calls, searches = call_sites(seed_source)
    judged = 1 if (config.metric or "").startswith("judge:") else 0
    if task is None:
        return _Shape(calls, searches, 0, 0, False, judged)
    dev = task.dev()
    feedback, selection = config.feedback or 0, config.selection or 0
    fixed = held_out_in_force(config, len(dev))
    if not _golds_showable(dev):
        return _Shape(calls, searches, 0, 0, fixed, judged)
    # held out (and QA), no selection problem is ever shown; the paper's reasoning draws
    # share one pool, so fewer selection problems may be unseen
    unseen = selection if fixed or task.track == "qa" else max(0, selection - feedback)
    control = 0
    if unseen < MIN_UNSEEN and callable(getattr(task, "control", None)):
        control = min(max(feedback, MIN_UNSEEN), MAX_CONTROL)
    return _Shape(calls, searches, feedback + control, control, fixed, judged)


def _golds_showable(dev: list) -> bool:
    """Whether a report can show this task's golds the way the memorisation check looks for
    them (`evals.guards.shown_problems`): if not, the check never probes."""
    from harness_learning.evals.guards import shown_problems
    from harness_learning.evals.problem import gold_text

    sample = dev[:3]
    return any(shown_problems([p], f"Gold: {gold_text(p)}") for p in sample)


def estimate_cost(config: AdaptConfig, solver: tuple[int, int],
                  proposer: tuple[int, int]) -> float | None:
    """USD of (prompt, completion) tokens of each role at its model's price, or None."""
    from harness_learning.harnesses.llm import ModelConfig
    from harness_learning.harnesses.llm.models import resolve_role
    from harness_learning.harnesses.llm.prices import price_of

    total = 0.0
    for role, spec, tokens in (("solver", config.solver, solver),
                               ("proposer", config.proposer, proposer)):
        price = price_of(ModelConfig.parse(resolve_role(spec, role)))
        if price is None:
            return None
        total += price.cost(*tokens)
    return total
