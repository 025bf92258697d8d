"""The systems of `bench peers`, each run to the same Solver-call budget on one task and seed.

- `best_valid`, `racing`, `pareto`: our adapter (`run_adaptation`) with that selection policy
  (`pareto` with `merge` on too: GEPA's parent selection and merge as options of ours),
  its Solver client the meter's counted one, its Proposer the counted proxy, and a store that
  notes the Solver calls spent at each round's decision (the anytime trace).
- `best_valid+ops` (any of ours with `+ops`): the same with operator candidates (`operators
  auto`, the bench's `operators_per_round`); plain `best_valid` is its ablation.
- `gepa`: `harness_learning_lab.bench.peers_gepa`.
- `openevolve`: OpenEvolve's `run_evolution` with `experiments/peers/openevolve.yaml` and the
  evaluator file beside it, which sends each program to the meter over loopback HTTP.
- `best_valid+lib` (any of ours with `+lib`): operators off, an experience library on
  (`--experience`: learned operators, the learned choice of what to try, past successes in the
  prompt), each run on a fresh copy of the bench's `experience` library (`{seed}` in its path
  picks the seed's own, as `bench experience`'s train phase writes them; empty: a library of
  the run's own, empty at its start).
- `gepa+menu`, `openevolve+menu`: the same peers told our building-block menu (GEPA in its
  reflection prompt's background, OpenEvolve in its system message). The blocks are importable
  in the sandbox where every system's candidates run, so a peer that uses one gets the real
  block: what the library gives, apart from what our search gives.
- `openevolve+rewrite`: OpenEvolve asking for whole programs instead of diffs, as its
  maintainers advise for small models.

Every search ends when the Solver-call budget is spent, or at `max_proposals` (a run of invalid
proposals spends no Solver call): with a cap above what the budget pays for, every system
spends the same calls. OpenEvolve runs `max_proposals` iterations, and the counting proxy
refuses its Proposer calls once the budget is spent, so the rest end at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.config import AdaptConfig, Budget
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.run import prepare, run_adaptation
from harness_learning.harnesses.store.sqlite import SQLiteLogStore
from harness_learning_lab import checkout
from harness_learning_lab.bench.peers_meter import Meter, Trace, solver_calls

OURS = ("best_valid", "racing", "pareto")
PEERS = ("gepa", "openevolve")
OPS, LIB, MENU, REWRITE = "+ops", "+lib", "+menu", "+rewrite"
SYSTEMS = (*OURS, *(f"{s}{OPS}" for s in OURS), *(f"{s}{LIB}" for s in OURS), *PEERS,
           *(f"{p}{MENU}" for p in PEERS), f"openevolve{REWRITE}")
"""Every system name the bench knows."""
PEERS_DIR = checkout() / "experiments" / "peers"


class TracedStore(SQLiteLogStore):
    """The run's log, which also offers each round's chosen version to the trace, with the
    Solver calls counted so far (what `adapt` would hand back then: the best selection score
    of the adopted chain, the later one on ties, as `AdaptResult`)."""

    def __init__(self, run_dir: Path, trace: Trace, toolbox: Any) -> None:
        super().__init__(run_dir)
        self.trace, self.toolbox = trace, toolbox

    def _put_decision(self, decision: Any) -> None:
        super()._put_decision(decision)
        scores = decision.scores or {}
        if not self.trace.points and scores.get("current") is not None:
            self.trace.offer(0, self.get_version_source(decision.current_sha), scores["current"])
        chosen = scores.get("chosen")
        if chosen is not None:
            self.trace.offer(solver_calls(self.toolbox), self.get_version_source(decision.chosen_sha),
                             chosen, ties_win=True)


def adapter_config(system: str, base: dict[str, Any], run_dir: Path) -> AdaptConfig:
    """Our adapter as `system`, with the bench's shared settings (`base`); `+ops` turns the
    operator candidates on, `+lib` the experience library at `run_dir/library` (every other
    field is the same, so plain `system` is the ablation of both)."""
    policy = system.removesuffix(OPS).removesuffix(LIB)
    merge = policy == "pareto"  # GEPA's two ideas together: Pareto parents and merges
    fields = {k: v for k, v in base.items() if k not in ("max_proposals", "experience")}
    return AdaptConfig(**{**fields, "run_dir": str(run_dir), "policy": policy, "merge": merge,
                          "operators": "auto" if system.endswith(OPS) else "none",
                          "experience": str(run_dir / "library") if system.endswith(LIB) else "",
                          "budget": Budget(solver_calls=base["budget"])})


def library_for(base: dict[str, Any], run_dir: Path) -> None:
    """A `+lib` run's library: a fresh copy of the bench's `experience` library (its `{seed}`
    filled in), so no run reads another's changes; none given: the run starts empty."""
    from harness_learning.harnesses.experience import LibraryError, give_location
    from harness_learning_lab.bench.libraries import copy_library

    source = str(base.get("experience") or "").replace("{seed}", str(base["seed"]))
    if not source:
        return
    try:  # the bench's settings are the user's word: a postgresql:// library may be reached
        copy_library(give_location(source), str(run_dir / "library"))
    except LibraryError as exc:  # a directory or a postgresql:// URL
        raise ValueError(f"{exc}, or run `harness-learn bench experience` first (its train "
                         "phase writes one per seed)") from exc


async def run_ours(system: str, meter: Meter, base: dict[str, Any], run_dir: Path) -> None:
    if system.endswith(LIB):
        library_for(base, run_dir)
    config = prepare(adapter_config(system, base, run_dir)).config
    store = TracedStore(run_dir, meter.trace, meter.toolbox)
    context = AdapterContext.from_config(config, task=meter.task, solver=meter.toolbox.solver,
                                         toolbox=meter.toolbox, store=store)
    await run_adaptation(config, context=context)


def openevolve_config(*, menu: bool, line_limit: int = 200, rewrite: bool = False) -> Any:
    """OpenEvolve's configuration from `openevolve.yaml`; with `menu`, its own system message
    followed by our building-block menu; with `rewrite`, whole programs instead of diffs."""
    from openevolve.config import load_config
    from openevolve.prompt.templates import TemplateManager

    from harness_learning_lab.bench.peers_gepa import menu_text

    config = load_config(str(PEERS_DIR / "openevolve.yaml"))
    if rewrite:
        config.diff_based_evolution = False
    if menu:
        own = config.prompt.system_message
        templates = TemplateManager(custom_template_dir=config.prompt.template_dir).templates
        own = templates.get(own, own)
        config.prompt.system_message = f"{own.rstrip()}\n\n{menu_text(line_limit)}"
        config.llm.update_model_params({"system_message": config.prompt.system_message},
                                       overwrite=True)
    return config


def run_openevolve(meter: Meter, seed_source: str, *, proposer_url: str, proposer_alias: str,
                   max_tokens: int, seed: int, run_dir: Path, max_proposals: int,
                   menu: bool = False, rewrite: bool = False) -> str:
    """OpenEvolve for `max_proposals` iterations (those after the budget is spent end at once:
    the proxy refuses their Proposer calls); the best program."""
    from openevolve.api import run_evolution

    config = openevolve_config(menu=menu, line_limit=meter.line_limit, rewrite=rewrite)
    for model in config.llm.models:
        model.name = proposer_alias
    config.llm.update_model_params({"api_base": proposer_url, "api_key": "local",
                                    "random_seed": seed, "max_tokens": max_tokens},
                                   overwrite=True)
    config.llm.api_base = proposer_url
    config.random_seed = config.database.random_seed = seed
    server = meter.serve()
    os.environ["HL_PEERS_METER"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with own_root_handlers(), own_signal_handlers():
            result = run_evolution(initial_program=seed_source,
                                   evaluator=str(PEERS_DIR / "openevolve_evaluator.py"),
                                   config=config, iterations=max(1, max_proposals),
                                   output_dir=str(run_dir / "openevolve"), cleanup=False)
    finally:
        server.shutdown()
        server.server_close()
    return result.best_code or seed_source


@contextmanager
def own_root_handlers() -> Iterator[None]:
    """Remove (and close) the root logging handlers added inside the block. OpenEvolve adds a
    file and a console handler to the root logger per run and never removes them, so in one
    bench process every later run's lines went to every earlier run's log file too, and each
    console line was printed once per run so far."""
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in before]:
            root.removeHandler(handler)
            handler.close()


@contextmanager
def own_signal_handlers() -> Iterator[None]:
    """Put back the SIGINT and SIGTERM handlers the block replaced. OpenEvolve sets both to
    ask its controller for a graceful shutdown and never restores them, so after its first run
    a bench ignored SIGTERM (and Ctrl+C) for the rest of the process."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def run_system(system: str, meter: Meter, seed_source: str, base: dict[str, Any],
               run_dir: Path, *, proposer_url: str, proposer_alias: str) -> None:
    """One system's search; its anytime trace is left in `meter.trace`."""
    max_tokens = base["proposer_params"]["max_tokens"]
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; known: {', '.join(SYSTEMS)}")
    if system.removesuffix(OPS).removesuffix(LIB) in OURS:
        asyncio.run(run_ours(system, meter, base, run_dir))
        return
    # Each peer evaluates the start harness on the dev problems first: the curve's start.
    peer = system.removesuffix(MENU).removesuffix(REWRITE)
    menu = system.endswith(MENU)
    if peer == "gepa":
        from harness_learning_lab.bench.peers_gepa import load_settings, run_gepa

        run_gepa(meter, seed_source, settings=load_settings(PEERS_DIR / "gepa.toml"),
                 proposer_url=proposer_url, proposer_alias=proposer_alias, max_tokens=max_tokens,
                 seed=base["seed"], run_dir=run_dir / "gepa", line_limit=base["line_limit"],
                 max_proposals=base["max_proposals"], menu=menu)
    else:
        run_openevolve(meter, seed_source, proposer_url=proposer_url,
                       proposer_alias=proposer_alias, max_tokens=max_tokens, seed=base["seed"],
                       run_dir=run_dir, max_proposals=base["max_proposals"], menu=menu,
                       rewrite=system.endswith(REWRITE))


