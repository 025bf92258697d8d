"""Extending a run: `resume --rounds N` (and larger budgets) continues a run past its end.

A run keeps its settings: what it was started with decides what its rounds mean, so `resume`
refuses any other change, naming each one. Two settings only say how far the run may go, the
number of rounds and the budgets, and raising them extends the run instead of starting another:
config.json takes the new values, the run's log records the change as a person's decision
(event `EXTENDED`, with what changed and after which round), and a finished run whose stop
rule no longer holds goes on from where it stopped (`reopen`). Lowering one is refused: a run
never takes back rounds it made.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.harnesses.rundir import RunDir

if TYPE_CHECKING:
    from langgraph.types import Command, StateSnapshot

EXTENDABLE = ("rounds", "budget")
"""The settings `resume` may raise: how far the run goes, not what its rounds do."""
EXTENDED = "run_extended"
"""Event kind: {"decision", "changes": {name: [old, new]}, "after_round", "how"}."""
BUDGET_FLAGS = {"solver_calls": "--max-solver-calls", "tokens": "--max-tokens",
                "cost_usd": "--max-cost-usd"}


def extension(stored: AdaptConfig, rounds: int | None, budget: dict[str, Any]
              ) -> dict[str, tuple[Any, Any]]:
    """What the wanted `rounds` and `budget` limits (key -> value; absent: as stored) change,
    as name -> (stored, wanted); a wanted value below the stored one raises ValueError."""
    changes: dict[str, tuple[Any, Any]] = {}
    if rounds is not None and rounds != stored.rounds:
        if stored.rounds is not None and rounds < stored.rounds:
            raise ValueError(f"--rounds {rounds} is below the run's {stored.rounds} rounds: "
                             "resume extends a run, it never takes rounds back")
        changes["rounds"] = (stored.rounds, rounds)
    for key, value in budget.items():
        have = getattr(stored.budget, key)
        if value == have:
            continue
        if value is not None and (have is None or value < have):
            limit = "no limit" if have is None else f"{have}"
            raise ValueError(f"{BUDGET_FLAGS[key]} {value} is below the run's budget ({limit}): "
                             "resume only raises a budget")
        changes[f"budget.{key}"] = (have, value)
    return changes


def extended(stored: AdaptConfig, changes: dict[str, tuple[Any, Any]]) -> AdaptConfig:
    """`stored` with `changes` (from `extension`) applied."""
    rounds = changes.get("rounds", (None, stored.rounds))[1]
    limits = {k.removeprefix("budget."): new for k, (_, new) in changes.items()
              if k.startswith("budget.")}
    return stored.replace(rounds=rounds, budget=stored.budget.model_copy(update=limits))


def extend_run(stored: AdaptConfig, changes: dict[str, tuple[Any, Any]], how: str,
               store_url: str = "") -> AdaptConfig:
    """Apply `changes` to the run: config.json rewritten, the decision logged; returns the run's
    new config. `how`: what asked for it (the command line), kept with the decision."""
    config = extended(stored, changes)
    run = RunDir(stored.path)
    with run.open_store(store_url or stored.store or None) as store:
        after = max([d.round for d in store.iter_decisions()] + [0])
        said = ", ".join(f"{name} {old} -> {new}" for name, (old, new) in changes.items())
        store.append_event(EXTENDED, {"decision": f"extended by a person: {said}",
                                      "changes": {k: list(v) for k, v in changes.items()},
                                      "after_round": after, "how": how})
    data = json.loads(config.to_json())
    data["run_dir"] = run.read_config().get("run_dir", data["run_dir"])  # as it was written
    run.write_config(data)
    return config


def reopen(config: AdaptConfig, snapshot: StateSnapshot) -> Command | None:
    """The input that continues a finished run whose stop rule no longer holds under `config`
    (an extended one): on to the next round's `sample`, as the route after `select` would go.
    None when the run is not finished, or stays so."""
    from langgraph.types import Command

    from harness_learning.graphs.adapter.nodes import stop_reason

    values = snapshot.values or {}
    if snapshot.next or not values.get("stop_reason") or stop_reason(config, values):
        return None
    return Command(goto="sample", update={"stop_reason": ""})
