"""The budget estimate printed before a run starts: an upper-bound style count of model calls,
their tokens and their price.

Solver calls per problem come from the seed's source: each `tools.llm(...)` call site counts
once, call sites inside a loop count `LOOP_GUESS` times. Evolved harnesses may call more or
fewer; the estimate says what the seed's shape implies, and the stop rules enforce the budget.
Dollars come from the models' prices (`harnesses.llm.prices`: 0 for local models); a model
nothing prices leaves the estimate's $ unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from harness_learning.evals.task import Task
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.harnesses.compiler import parse_source

LOOP_GUESS = 5
PROMPT_TOKENS_GUESS = 400
PROPOSER_PROMPT_GUESS = 3000


def llm_calls_per_problem(source: str) -> int:
    """Static count of Solver calls one run of `source` makes (loops and conditional edges that
    point back count LOOP_GUESS times)."""
    tree = parse_source(source)
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "llm":
            count += 1
    loops = "add_conditional_edges" in source or any(
        isinstance(n, ast.For | ast.While) for n in ast.walk(tree))
    return max(1, count * (LOOP_GUESS if loops else 1))


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

    def describe(self) -> str:
        extra = f" (+{self.training_only} for training)" if self.training_only else ""
        extra += f" + {self.operators} operator candidates" if self.operators else ""
        dollars = ("$ unknown (no price for a model: add ?price_in=..&price_out=..)"
                   if self.cost_usd is None else f"~${self.cost_usd:,.2f}")
        return (f"budget estimate: {self.rounds} rounds x {self.candidates} candidates{extra} -> "
                f"~{self.solver_calls:,} Solver calls, {self.proposer_calls} Proposer calls, "
                f"~{self.tokens:,} tokens, {dollars} (upper bound; evaluations are cached and "
                "reused)")


def estimate_budget(config: AdaptConfig, seed_source_text: str | None = None,
                    live: dict | None = None, task: Task | None = None) -> Estimate:
    """`task`: the run's task if it is loaded already (else it is opened here, for its seed)."""
    from harness_learning.graphs.adapter.inputs import open_task, start_source

    if seed_source_text is None:
        seed_source_text = start_source(config, task if task is not None
                                        else open_task(config, live))
    per_problem = llm_calls_per_problem(seed_source_text)
    candidate_problems = (config.race.max_problems(config.candidates, config.selection)
                          if config.policy == "racing" else config.selection * config.candidates)
    training_only = config.samples_per_round - config.candidates  # evaluated in full
    candidate_problems += config.selection * training_only
    operators = config.operators_per_round if config.operators != "none" else 0
    candidate_problems += config.selection * operators  # a block may call the Solver more
    problems_per_round = config.feedback + config.selection + candidate_problems
    solver_calls = config.rounds * problems_per_round * per_problem
    proposer_calls = config.rounds * config.samples_per_round * (1 + config.second_chance_turns)
    solver = (solver_calls * PROMPT_TOKENS_GUESS,
              solver_calls * config.solver_params.get("max_tokens", 256))
    proposer = (proposer_calls * PROPOSER_PROMPT_GUESS,
                proposer_calls * config.proposer_params.get("max_tokens", 2048))
    return Estimate(config.rounds, config.candidates, solver_calls, proposer_calls,
                    sum(solver) + sum(proposer), training_only, operators,
                    estimate_cost(config, solver, proposer))


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
