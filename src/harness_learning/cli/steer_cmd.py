"""Driving a run to its end and steering it: the approval gate in a terminal, `harness-learn
approve` for a run that waits (from any shell) and `harness-learn rollback`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness_learning.cli import app
from harness_learning.cli._common import (
    console,
    out,
    print_json_last,
    run_async,
    user_errors,
)
from harness_learning.cli.errors import EXIT_USAGE, EXIT_WAITING, CliError, unreachable
from harness_learning.cli.exit_checks import check_stop
from harness_learning.cli.live import LiveView
from harness_learning.cli.show_cmd import StoreOption
from harness_learning.graphs.adapter.sealed_inputs import TRUST_HELP
from harness_learning.harnesses.text_safety import for_rich, for_terminal

if TYPE_CHECKING:
    from harness_learning.evals.user_failures import UserCodeFailures
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.graphs.adapter.prepared import PreparedRun


def drive(run: PreparedRun, *, resume: bool, as_json: bool, answer: dict | None = None,
          test_problems: int = 0) -> dict:
    """Run (or continue) an adaptation until it stops; in a terminal, answer the approval gate
    by asking, elsewhere stop with exit code 6 and say how to answer. Returns the final state.
    What of `run` is not open yet is opened here, once: every run below shares it.
    `test_problems`: held-out problems the caller tests on afterwards (the
    demo), which the estimate includes."""
    from harness_learning.graphs.adapter.estimate import estimate_budget
    from harness_learning.graphs.adapter.run import PENDING

    run = run.opened()
    config = run.config
    estimate = estimate_budget(config, task=run.task, test_problems=test_problems)
    console.print(estimate.describe())
    while True:
        view = LiveView(config, bound=estimate.solver_calls, spent_before=_solver_calls(config),
                        lines=not as_json)
        final = _run_once(run, view, resume=resume, answer=answer)
        pending = final.get(PENDING)
        if pending is None:
            break
        answer, resume = ask_approval(config, pending), True
    out.print(view.rounds_table(final))
    out.print(f"stopped: {for_rich(final.get('stop_reason', '?'))} · current version "
              f"{final.get('current_sha', '')[:12]}")
    failures = user_code_failures(config)
    for line in failures.lines():
        out.print(for_terminal(line), style="yellow", markup=False, highlight=False)
    if as_json:
        rounds = final.get("rounds", [])
        print_json_last({"rounds": len(rounds), "current_sha": final.get("current_sha"),
                         "best_score": final.get("best_score"),
                         "stop_reason": final.get("stop_reason"), "spent": final.get("spent"),
                         **failures.to_json(), **experience_json(config)})
    check_stop(final.get("stop_reason"), config.run_dir)
    return final


def experience_json(config: AdaptConfig) -> dict[str, Any]:
    """With an experience library: per candidate, the entry it came from and the entries its
    prompt showed (`{"experience": {proposal id: {"from", "shown"}}}`); {} without one."""
    if not getattr(config, "experience", ""):
        return {}
    from harness_learning.graphs.adapter.experience import shown_ids
    from harness_learning.harnesses.rundir import RunDir

    with RunDir(config.path).open_store(config.store or None) as store:
        return {"experience": shown_ids(store)}


def user_code_failures(config: AdaptConfig) -> UserCodeFailures:
    """What the user's metric and tools did wrong over the run's evaluations, read from its log
    (`evals.user_failures`): a run ends with them said, as `run`, `show` and `report` say them."""
    from harness_learning.evals.user_failures import UserCodeFailures
    from harness_learning.report.model import open_store

    with open_store(config.run_dir, config.store or None) as store:
        return UserCodeFailures.of(ev.result for ev in store.iter_evaluations())


def _solver_calls(config: AdaptConfig) -> int:
    """The Solver calls the run's log holds already (0 for a run not started): where the live
    view's bar starts. Display only: a log that cannot be read here counts 0, and the run
    itself says what is wrong with it."""
    from harness_learning.report.model import open_store

    try:
        with open_store(config.run_dir, config.store or None) as store:
            return int(store.spent().get("solver_calls", 0))
    except Exception:  # noqa: BLE001 - the bar's starting point only
        return 0


def _run_once(run: PreparedRun, view: LiveView, *, resume: bool, answer: dict | None) -> dict:
    from harness_learning.graphs.adapter.nodes import InfraStop
    from harness_learning.graphs.adapter.run import run_adaptation
    from harness_learning.harnesses.llm import InfraError

    config = run.config
    try:
        with view:
            final = run_async(run_adaptation(config, resume=resume, on_update=view.on_update,
                                             context=run.context(progress=view.on_progress),
                                             answer=answer))
    except InfraStop as exc:
        raise unreachable(config.solver, "solver", str(exc), "--solver", config.run_dir) from exc
    except InfraError as exc:  # the Proposer's call failed (the Solver's become InfraStop)
        raise unreachable(config.proposer, "proposer", str(exc), "--proposer",
                          config.run_dir) from exc
    return final


def ask_approval(config: AdaptConfig, pending: dict) -> dict:
    """Show the candidate the policy would adopt and ask; off a terminal, say how to answer."""
    from rich.syntax import Syntax

    round_, index = pending.get("round"), pending.get("candidate")
    console.print(f"\nround {round_}: the policy would adopt candidate {index} (selection "
                  f"{_f(pending.get('selection_score'))} vs current {_f(pending.get('current_score'))})")
    if not sys.stdin.isatty():
        raise CliError(f"round {round_} waits for approval of candidate {index}",
                       f"`harness-learn approve {config.run_dir}` adopts it, `harness-learn approve "
                       f"{config.run_dir} --reject REASON` rejects it; `harness-learn show "
                       f"{config.run_dir} --candidate r{round_}-c{index}` shows its diff",
                       EXIT_WAITING)
    console.print(Syntax(for_terminal(pending.get("diff") or "(empty diff)"), "diff",
                         word_wrap=True))
    if typer.confirm(f"Adopt candidate {index} of round {round_}?", default=True):
        return {"approve": True}
    reason = typer.prompt("Why not? (the Proposer reads this next round)", default="",
                          show_default=False)
    return {"approve": False, "reason": reason}


@app.command()
def approve(
    run_dir: Annotated[Path, typer.Argument(help="A run directory waiting for approval.")],
    reject: Annotated[str | None, typer.Option(help="Reject the candidate, with this reason "
                                                    "(the Proposer reads it).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="End with a JSON summary line.")] = False,
    store: StoreOption = "",
    trust_inputs: Annotated[bool, typer.Option("--trust-inputs", help=TRUST_HELP)] = False,
) -> None:
    """Answer a run's pending approval (adopt, or --reject REASON) and continue the run here."""
    from harness_learning.graphs.adapter.inputs import inputs_dir
    from harness_learning.graphs.adapter.run import load_config
    from harness_learning.graphs.adapter.sealed_inputs import check_sealed
    from harness_learning.graphs.adapter.steer import pending_approval

    config = load_config(run_dir)
    with user_errors():  # a handed run's kept code is not imported unasked (as resume)
        check_sealed(inputs_dir(config), trust_inputs)
    if store:  # for this process only, as `resume --store`
        config = config.replace(store=store)
    pending = pending_approval(run_dir, store=store)
    if pending is None:
        raise CliError(f"{run_dir} waits for no approval",
                       f"only a run started with `--approval` waits; `harness-learn show {run_dir}` "
                       "shows where it stands", EXIT_USAGE)
    if reject is not None and not reject.strip():
        raise CliError("--reject needs a reason", "say why, e.g. --reject 'hard-codes answers'",
                       EXIT_USAGE)
    answer = {"approve": reject is None, "reason": reject or ""}
    verb = "rejected" if reject is not None else "approved"
    console.print(f"{verb} candidate {pending.get('candidate')} of round {pending.get('round')}")
    from harness_learning.graphs.adapter.prepared import PreparedRun

    drive(PreparedRun(config), resume=True, as_json=as_json, answer=answer)


@app.command()
def rollback(
    run_dir: Annotated[Path, typer.Argument(help="A finished run directory.")],
    version: Annotated[str, typer.Argument(help="The round whose version to restore (0 = seed) "
                                                "or a version's sha prefix.")],
    reason: Annotated[str, typer.Option(help="Why (recorded with the decision).")] = "",
    store: StoreOption = "",
) -> None:
    """Make an earlier version current again, recorded as a decision the report shows."""
    from harness_learning.graphs.adapter.steer import rollback as do_rollback

    decision = do_rollback(run_dir, version, reason, store=store)
    out.print(f"round {decision.round}: {for_rich(decision.reason)} · current version "
              f"{decision.chosen_sha[:12]} (was {decision.current_sha[:12]})")


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
