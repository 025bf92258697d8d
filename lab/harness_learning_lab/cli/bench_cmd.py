"""`harness-learn bench round, racing, log-round, reliability, local-models, sandbox, store,
peers, grpo-step` (registered on import; `bench bm25` is in bench_bm25_cmd.py)."""

import json as _json
import sys as _sys
from pathlib import Path as _Path
from typing import Annotated as _Annotated

import typer as _typer

from harness_learning.cli import bench_app as _bench_app


# --- bench round, bench racing (adapter) -------------------------------------------------
@_bench_app.command("round")
def bench_round(
    latency: _Annotated[list[float] | None, _typer.Option(help="Seconds per call; the first is the main point, the last the stress point.")] = None,
    candidates: _Annotated[int, _typer.Option(help="Candidates of the round.")] = 8,
    problems: _Annotated[int, _typer.Option(help="Selection problems per candidate.")] = 64,
    slots: _Annotated[int, _typer.Option(help="Concurrent requests the simulated endpoint serves.")] = 64,
    transport: _Annotated[str, _typer.Option(help="Solver transport: direct or litellm.")] = "direct",
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """One QA-shaped round (8 x 64 x 5 Solver calls) through the real stack against the simulated endpoint."""
    from harness_learning_lab.bench import round as round_bench

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    figures = round_bench.run(tuple(latency or (1.0, 0.1)), candidates, problems, slots,
                              transport=transport, log=log)
    print(round_bench.table(figures), flush=True)
    if as_json:
        print(_json.dumps(figures))


@_bench_app.command("racing")
def bench_racing(
    seeds: _Annotated[int, _typer.Option(help="Simulated rounds per scenario.")] = 4000,
    problems: _Annotated[int, _typer.Option(help="Selection problems per round.")] = 64,
    rho: _Annotated[float, _typer.Option(help="Correlation of candidates' outcomes on a problem.")] = 0.5,
    frontier: _Annotated[bool, _typer.Option(help="Also sweep staged schedules: the best worst-case P(best) any of them reaches at >= 2x fewer calls.")] = False,
    adaptive: _Annotated[bool, _typer.Option(help="Also compare fully adaptive allocation (top-two Thompson sampling, a paired chase) with staged racing: P(best) and wall time.")] = False,
    race: _Annotated[str, _typer.Option(help="The race rule simulated and replayed, as JSON (as `adapt --race`); default: RaceRule().")] = "",
    pool_resamples: _Annotated[int, _typer.Option(help="With --from-log: also resample each logged pool this many times (each replayed over half as many rounds) for an interval that counts the pool's own uncertainty; 0: off.")] = 0,
    curve: _Annotated[bool, _typer.Option(help="Also trace the trade-off: the best worst-case P(best) staged schedules keep at each call saving, with our rules beside it.")] = False,
    plot: _Annotated[_Path | None, _typer.Option(help="With --curve: write the trade-off as a PNG here.")] = None,
    from_log: _Annotated[list[_Path] | None, _typer.Option(help="Run directory with logged rounds (repeatable): fit rho to them, replay racing on their real outcomes, and simulate at the fitted rho.")] = None,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """Racing vs full evaluation on simulated candidates with known accuracies: calls and P(best)."""
    from harness_learning.cli._common import race_rule
    from harness_learning_lab.bench import racing as racing_bench

    rule = race_rule(race)
    logged = _logged_rounds(from_log) if from_log else None  # bad paths fail before the work
    figures = racing_bench.simulate(seeds=seeds, problems=problems, rho=rho, rule=rule)
    print(racing_bench.table(figures), flush=True)
    if frontier:
        from harness_learning_lab.bench import racing_frontier

        figures["frontier"] = racing_frontier.sweep(seeds=seeds, problems=problems, rho=rho)
        print(racing_frontier.table(figures["frontier"]), flush=True)
    if adaptive:
        from harness_learning_lab.bench import racing_adaptive

        figures["adaptive"] = racing_adaptive.compare(seeds=seeds, problems=problems, rho=rho)
        print(racing_adaptive.table(figures["adaptive"]), flush=True)
    if curve:
        from harness_learning_lab.bench import racing_curve

        figures["curve"] = racing_curve.curve(seeds=seeds, problems=problems, rho=rho)
        print(racing_curve.table(figures["curve"]), flush=True)
        if plot:
            print(f"plot: {racing_curve.plot(figures['curve'], plot)}", flush=True)
    if logged:
        figures["logged"] = _racing_logged(logged, seeds, problems, rule, pool_resamples)
    if as_json:
        print(_json.dumps(figures))


@_bench_app.command("log-round")
def bench_log_round(
    out: _Annotated[_Path, _typer.Option(help="Run directory for the round's log (reused on rerun).")],
    task: _Annotated[str, _typer.Option(help="Task name: rg:<dataset>, hotpotqa, musique or 2wiki.")] = "rg:letter_counting",
    edits: _Annotated[_Path, _typer.Option(help="Folder of candidate edits (*.txt), each as a Proposer would write it.")] = _Path("experiments/candidates/reasoning_direct"),
    harness: _Annotated[str, _typer.Option(help="Seed harness the edits apply to (file or seed name); default: the task's seed.")] = "",
    selection: _Annotated[int, _typer.Option(help="Selection problems every candidate runs.")] = 128,
    task_config: _Annotated[str, _typer.Option(help="reasoning-gym dataset config as JSON, e.g. '{\"max_digits\": 1}'.")] = "",
    model: _Annotated[str, _typer.Option(help="Solver model: 'local' or a litellm model string.")] = "local",
    max_tokens: _Annotated[int, _typer.Option(help="Solver max_tokens (temperature 0, as the adapter's default).")] = 256,
    concurrency: _Annotated[int, _typer.Option(help="Problems in flight.")] = 4,
) -> None:
    """Evaluate the seed and hand-written candidates on the same problems with a real Solver and
    log them as one round (what `bench racing --from-log` replays)."""
    from harness_learning.cli._common import progress, read_harness, run_async
    from harness_learning.evals.registry import get_task
    from harness_learning.graphs.adapter.context import run_solver
    from harness_learning.harnesses.rundir import RunDir
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning_lab.bench import candidate_round

    try:
        options = {"config": _json.loads(task_config)} if task_config else {}
    except ValueError as e:
        raise _typer.BadParameter(f"--task-config is not JSON: {e}") from e
    the_task = get_task(task, n_dev=selection, **options)
    seed = read_harness(harness or the_task.seed)
    cands = candidate_round.build_candidates(seed, candidate_round.load_edits(edits))
    problems = the_task.dev()[:selection]
    solver = run_solver(model, out)  # candidates that only parse differently cost no calls
    toolbox = Toolbox(solver=solver, retriever=the_task.retriever(),
                      solver_params={"temperature": 0.0, "max_tokens": max_tokens})
    with RunDir(out).open_store() as store, \
            progress("evaluating", len(cands) * len(problems)) as advance:
        store.init_run({"task": task, "task_options": options, "solver": model,
                        "selection": selection, "max_tokens": max_tokens,
                        "edits": str(edits), "kind": "logged candidate round"})
        means = run_async(candidate_round.log_round(
            store, the_task, cands, problems, toolbox, concurrency,
            on_result=lambda _r: advance()))
    for name, mean in means.items():
        print(f"{name:<24} {mean:.3f}")
    print(f"Solver: {solver.stats.calls} calls made, {solver.stats.cache_hits + solver.stats.shared} "
          "answered from the run's cache")
    print(f"logged to {out}; replay: harness-learn bench racing --from-log {out}")


def _logged_rounds(run_dirs: list[_Path]) -> list:
    from harness_learning_lab.bench import racing_logged

    try:
        rounds = [r for d in run_dirs for r in racing_logged.logged_rounds(d)]
    except FileNotFoundError as e:
        raise _typer.BadParameter(str(e)) from e
    if not rounds:
        raise _typer.BadParameter("no round in these logs has two versions on the same selection "
                                  "problems (see `harness-learn bench log-round`)")
    return rounds


def _racing_logged(rounds: list, seeds: int, problems: int, rule, pool_resamples: int) -> dict:
    from harness_learning_lab.bench import racing as racing_bench
    from harness_learning_lab.bench import racing_logged

    fit = racing_logged.fit_rho(rounds)
    draws = min(seeds, 2000)
    rows = racing_logged.replay(rounds, problems=problems, draws=draws, rule=rule,
                                pool_resamples=pool_resamples)
    print(racing_logged.table(fit, rows, problems, draws), flush=True)
    if fit["rho"] is None:
        return {**fit, "rows": rows, "simulated_at_fit": None}
    at_fit = racing_bench.simulate(seeds=seeds, problems=problems, rho=round(fit["rho"], 2),
                                   rule=rule)
    print(racing_bench.table(at_fit), flush=True)
    return {**fit, "rows": rows, "simulated_at_fit": at_fit}


# --- bench reliability (fault and hostile-input suite) ----------------------------------
@_bench_app.command("reliability")
def bench_reliability(
    kills: _Annotated[int, _typer.Option(help="SIGKILLs of the adapter process.")] = 5,
    seed: _Annotated[int, _typer.Option(help="Seed of the kill delays.")] = 0,
    keep: _Annotated[str | None, _typer.Option(help="Keep the scenarios' run directories here.")] = None,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """Hostile harness code, bad Proposer output, endpoint faults, kills and bad data: figures."""
    import tempfile

    from harness_learning_lab.reliability.bench import run_all, table

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="hl-reliability-") as tmp:
        figures = run_all(_Path(keep or tmp), kills=kills, seed=seed, log=log)
    print(table(figures), flush=True)
    if as_json:
        print(_json.dumps(figures))


# --- bench local-models (Proposer and Solver servers side by side) -----------------------
@_bench_app.command("local-models")
def bench_local_models(
    threads: _Annotated[list[int] | None, _typer.Option(help="Proposer thread counts to try.")] = None,
    candidates: _Annotated[int, _typer.Option(help="Proposals per round.")] = 3,
    max_tokens: _Annotated[int, _typer.Option(help="Tokens generated per proposal.")] = 64,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """Qwen2.5-Coder Proposer beside a busy SmolLM2 Solver: first-token time per candidate
    (prompt evaluation) with a shared vs an own server, and generation tokens/s, per thread count."""
    from harness_learning_lab.bench import local_models

    results = local_models.run(threads or [1, 2], candidates, max_tokens,
                               log=lambda m: print(m, file=_sys.stderr, flush=True))
    print(local_models.table(results), flush=True)
    if as_json:
        print(_json.dumps({"results": results}))


# --- bench sandbox (launch cost, worker start, bridge) -----------------------------------
@_bench_app.command("sandbox")
def bench_sandbox(
    calls: _Annotated[int, _typer.Option(help="Bridge round trips timed.")] = 300,
    starts: _Annotated[int, _typer.Option(help="Cold and warm worker starts timed.")] = 3,
    launches: _Annotated[int, _typer.Option(help="Sandboxed launches per configuration.")] = 15,
) -> None:
    """Launch cost with and without seccomp and the candidate cgroup, worker start, bridge."""
    import asyncio

    from harness_learning_lab.bench import sandbox as sandbox_bench

    print(_json.dumps(asyncio.run(sandbox_bench.measure(calls, starts, launches)), indent=2))


@_bench_app.command("store")
def bench_store(
    url: _Annotated[str, _typer.Option(help="A PostgreSQL database to measure (postgresql://USER@HOST:PORT/DB); the bench's schema is dropped after.")],
    results: _Annotated[int, _typer.Option(help="Results stored, then read back.")] = 2000,
    batch: _Annotated[int, _typer.Option(help="Results per put_results / get_results call (an evaluation's batch).")] = 50,
    events: _Annotated[int, _typer.Option(help="Events appended.")] = 500,
) -> None:
    """Log store operations per second, SQLite against PostgreSQL: put and get results, append
    events, the spend sum."""
    from harness_learning_lab.bench import store_ops

    print(_json.dumps(store_ops.measure(url, results, batch, events), indent=2))


def _peers_settings(config: _Path, scale: str, smoke: bool, overrides: dict) -> dict:
    """The scale's settings with the command line's overrides, checked before anything runs
    (a bad name fails here, in one line with a hint)."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning_lab.bench import peers
    from harness_learning_lab.bench.peers_systems import MENU, PEERS, SYSTEMS

    if not config.is_file():
        raise CliError(f"no bench config at {config}",
                       "run from the repository root or pass --config", EXIT_USAGE)
    try:
        settings = peers.load_settings(config, scale, smoke=smoke)
    except ValueError as e:
        raise CliError(str(e), "choose --scale full, cpu, racing, qwen or smoke (--smoke: a "
                       "scale with a [SCALE.smoke] table)", EXIT_USAGE) from None
    settings.update({k: v for k, v in overrides.items() if v})
    if bad := [s for s in settings["systems"] if s not in SYSTEMS]:
        raise CliError(f"unknown system(s) {', '.join(bad)}",
                       f"choose from {', '.join(SYSTEMS)}", EXIT_USAGE)
    if any(s.removesuffix(MENU) in PEERS for s in settings["systems"]):
        import importlib.util

        if missing := [m for m in ("gepa", "openevolve") if importlib.util.find_spec(m) is None]:
            raise CliError(f"the peers are not installed ({', '.join(missing)})",
                           "pip install -e ./lab (the lab requires them)", EXIT_USAGE)
    return settings


def _peers_on_ray(address: str, out: _Path, settings: dict, solver_url: str, proposer_url: str,
                  log) -> list[dict]:
    """The grid as Ray tasks; Ray missing or a cluster that does not answer is one line
    (`errors.classify` reads the lab's `RayProblem`)."""
    from harness_learning_lab.bench import peers_ray

    return peers_ray.run(address, out, settings, solver_url, proposer_url, log=log)


# --- bench peers (our adapter against GEPA and OpenEvolve) -------------------------------
@_bench_app.command("peers")
def bench_peers(
    out: _Annotated[_Path, _typer.Option(help="Bench directory: finished runs are kept and reused.")] = _Path("runs/bench-peers"),
    smoke: _Annotated[bool, _typer.Option("--smoke", help="The config's \\[smoke] size: one task, one seed, a tiny budget (same as --scale smoke); with another --scale, that scale's own \\[SCALE.smoke] sizes.")] = False,
    scale: _Annotated[str, _typer.Option(help="full (the config's top level) or a table of it: cpu (what a 2-core machine runs in about two hours), racing (best_valid against racing where the Solver budget binds), qwen (Qwen2.5-Coder-1.5B as Solver where a block is known to help: ours with and without operators against GEPA and OpenEvolve with and without the block menu), equal (the qwen scale at equal spend: every search runs until the budget is spent, with our experience library and OpenEvolve's whole-program rewrites added), smoke.")] = "full",
    config: _Annotated[_Path, _typer.Option(help="Bench settings (tasks, systems, seeds, budget, splits).")] = _Path("experiments/peers/bench.toml"),
    task: _Annotated[list[str] | None, _typer.Option(help="Only these tasks (repeatable).")] = None,
    system: _Annotated[list[str] | None, _typer.Option(help="Only these systems (repeatable): best_valid, racing, pareto (each also with +ops: operator candidates, or +lib: the experience library, operators off), gepa, openevolve (each also with +menu: the block menu in its prompt), openevolve+rewrite (whole programs, not diffs).")] = None,
    seeds: _Annotated[int | None, _typer.Option(help="Seeds 0..N-1 instead of the config's.")] = None,
    budget: _Annotated[int | None, _typer.Option(help="Solver calls per search instead of the config's.")] = None,
    solver_url: _Annotated[str, _typer.Option(help="A running OpenAI-compatible Solver server (ALIAS@URL, or ALIAS@URL1,URL2 for replicas); default: start the scale's solver_model locally (SmolLM2-135M unless set), solver_replicas servers of it.")] = "",
    proposer_url: _Annotated[str, _typer.Option(help="A running Proposer server (ALIAS@URL); default: start local Qwen2.5-Coder-1.5B.")] = "",
    plot: _Annotated[_Path | None, _typer.Option(help="Write the anytime curves as a PNG here.")] = None,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: per system final_test, ci95, solver_calls, ...")] = False,
    finished: _Annotated[bool, _typer.Option(help="Print the table of the runs finished so far in OUT and run nothing: no model is started (a look at a grid another process is running, or one finished over several sittings).")] = False,
    markdown: _Annotated[bool, _typer.Option(help="After the table, the same figures as a Markdown table (a README's head to head).")] = False,
    ray: _Annotated[str, _typer.Option("--ray", help="Run each (task, seed, system) as a Ray task on this cluster: auto (the one `ray start` made here) or HOST:PORT; finished runs in --out are reused as without it (pip install 'harness-learning\\[ray]').")] = "",
) -> None:
    """Our adapter (best_valid, racing) against GEPA and OpenEvolve: same seed harness, models,
    problems and Solver-call budget; held-out score with a 95% interval, calls, tokens, wall;
    with ours with operators among the systems, the paired head-to-head figure under the table."""
    from harness_learning.cli.errors import EXIT_UNREACHABLE, EXIT_USAGE, CliError
    from harness_learning_lab.bench import peers

    def fail(message: str, hint: str) -> None:
        raise CliError(message, hint, EXIT_USAGE)

    settings = _peers_settings(config, scale, smoke, {"tasks": task, "systems": system,
                                                      "seeds": list(range(seeds)) if seeds else None,
                                                      "budget": budget})

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    try:
        if finished:
            results = peers.finished_so_far(out, settings)
            print(f"{len(results)} of {len(peers.result_paths(out, settings))} runs finished "
                  f"in {out}", flush=True)
            if not results:
                return
        elif (results := peers.finished(out, settings)) is None and ray:
            results = _peers_on_ray(ray, out, settings, solver_url, proposer_url, log)
        elif results is None:
            with peers.endpoints(solver_url, proposer_url, settings.get("solver_model", ""),
                                 settings.get("solver_replicas", 1)) as ends:
                results = peers.run(out, settings, ends, log=log)
    except peers.ProposerUnreachable as e:
        raise CliError(str(e), "check the Proposer's server (--proposer-url), then run the same "
                       "command again: finished runs are kept", EXIT_UNREACHABLE) from e
    except ValueError as e:
        fail(str(e), "give each scale its own --out; servers as ALIAS@http://HOST:PORT/v1")
    _print_peers(results, settings, plot, as_json, markdown)


def _print_peers(results: list[dict], settings: dict, plot: _Path | None, as_json: bool,
                 markdown: bool = False) -> None:
    """The peers table (and its Markdown), the head-to-head figure, the plot and the JSON line
    of `results`."""
    from harness_learning_lab.bench import peers_report, peers_stats

    systems = peers_report.summarize(results)
    print(peers_report.table(systems), flush=True)
    if markdown:
        print("\n" + peers_report.markdown(systems) + "\n", flush=True)
    h2h = peers_stats.head_to_head(results, settings.get("gain_tasks", []))
    if h2h is not None:
        print(peers_stats.text(h2h), flush=True)
    if plot:
        title = peers_report.plot_title(results, settings)
        print(f"plot: {peers_report.plot(results, plot, title)}", flush=True)
    if as_json:
        print(_json.dumps({"systems": systems, "settings": settings, "head_to_head": h2h}))


# --- bench grpo-step (training) ------------------------------------------------------------
@_bench_app.command("grpo-step")
def bench_grpo_step(
    logs: _Annotated[list[_Path], _typer.Argument(help="Run directories whose logged prompts the group answers (as `train grpo-online`).")],
    model: _Annotated[str, _typer.Option(help="Policy: a checkpoint or a bundled name.")] = "smollm2",
    group: _Annotated[int, _typer.Option(help="Completions in the group (the step's batch).")] = 8,
    completion: _Annotated[int, _typer.Option(help="Tokens generated per completion at most.")] = 160,
    problems: _Annotated[int, _typer.Option(help="Selection problems each completion is scored on.")] = 4,
    micro_batch: _Annotated[int, _typer.Option(help="TRL path's sequences per backward pass (1: what fits 24 GiB); the shared path takes the group at once.")] = 1,
    path: _Annotated[list[str] | None, _typer.Option(help="Only these paths (repeatable): trl, shared.")] = None,
    solver: _Annotated[str, _typer.Option(help="Solver the evaluated harnesses call.")] = "local:smollm2-135m",
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: per path the phase seconds, and the speedup.")] = False,
) -> None:
    """One online GRPO step with its evaluations, timed by phase: TRL's per-row forward against
    the shared prompt prefix, same prompts and model, in one run."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.training.config import GRPOOnlineConfig
    from harness_learning_lab.bench import grpo_step

    paths = tuple(path or ("trl", "shared"))
    if bad := [p for p in paths if p not in ("trl", "shared")]:
        raise CliError(f"unknown path(s) {', '.join(bad)}", "choose trl and/or shared", EXIT_USAGE)
    if missing := [str(p) for p in logs if not (p / "log.sqlite").exists()]:
        raise CliError(f"no execution log in {', '.join(missing)}",
                       "pass run directories (each holds log.sqlite)", EXIT_USAGE)
    base = GRPOOnlineConfig(model=model, out="", num_generations=group, batch_size=group,
                            max_completion_length=completion, num_problems=problems,
                            micro_batch_size=micro_batch, temperature=0.7, solver=solver,
                            concurrency=2)
    figures = grpo_step.run(logs, base, paths,
                            log=lambda msg: print(msg, file=_sys.stderr, flush=True))
    print(grpo_step.table(figures), flush=True)
    if as_json:
        print(_json.dumps(figures))
