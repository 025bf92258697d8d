"""`harness-learn bench experience`: does an experience library carry what worked on some task
types to others, at less Solver spend than the hand-written operator order?

Settings: `experiments/experience/bench.toml` (its `[smoke]` table for a run of minutes). The
task types come from `experiments/task_types.toml`, classed there before any learner was scored:
the held-out types must be `headroom` or `modest` there, the control `control`; the training
types must be disjoint from the held-out ones and from the peers bench's tasks (its `qwen`
scale's, products, chain_sum and letter_counting), or the command stops with one line.

- Train phase (arm `train`): operators `auto` with `--experience` on each training type in
  turn, all writing one library per seed (`OUT/libraries/train-seed<k>`), every round run
  (`stop_when_perfect` off: what it tries on top of a perfect version is evidence too).
- Test phase, per held-out type and the control, every arm with the same models, rounds,
  candidates, operators_per_round, selection and feedback sizes, patience and stop rule (a
  strict run ends once its version scores 1.0 on selection):
  `proposer` (no operators, no library), `library` (a fresh copy of the trained library:
  learned operators, learned choice, past successes; operators off) and `operators`
  (operators `auto`, no library).
- Continual (arm `continual`): the held-out types in sequence, the library arm's settings on
  one copy of the trained library that grows with each run; then every earlier type rerun on a
  copy of the final library (arm `retention`).

The split (types, arms, seeds) is written to `OUT/split.json` before any run, and a rerun with
another split in the same `OUT` is refused. A finished run is `OUT/runs/<arm>/<type>/seed<k>/
result.json` and never redone; an unfinished one resumes from its checkpoint (the adapter's
own `resume`: same run id, so a library is written once per run), unless the bench's settings
changed under it, when it starts again from scratch. Its `wall_s` is then the time of the
attempt that finished it. Held-out scores come from
the same test problems for every arm and seed (one split secret per type, `OUT/splits.json`),
scored by `peers.TestScores` outside the runs' logs, so they count in no arm's Solver calls.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_learning_lab import checkout
from harness_learning_lab.bench.libraries import copy_library
from harness_learning_lab.scaled_toml import at_scale, read_toml

Log = Callable[[str], None]
SETTINGS = checkout() / "experiments" / "experience" / "bench.toml"
TYPES = checkout() / "experiments" / "task_types.toml"
PEERS = checkout() / "experiments" / "peers" / "bench.toml"
TEST_ARMS = ("proposer", "library", "operators")
SPLIT = "split.json"
PASSED = ("report_chars", "memory_tokens", "experience_shown", "experience_tokens", "line_limit")
"""AdaptConfig fields a settings file may set (the same for every arm); unset: the defaults."""


class PlanError(ValueError):
    """A split the bench cannot run; the message is one line with a hint."""


@dataclass(frozen=True)
class Run:
    """One adaptation run of the bench: its arm, type, seed, library and operators."""

    arm: str
    task: str
    seed: int
    library: str = ""
    operators: str = "none"
    library_from: str = ""
    """Copy this library into `library` before the run (empty: use `library` as it is)."""


def load_settings(path: Path = SETTINGS, smoke: bool = False) -> dict[str, Any]:
    """The top-level settings, or with the `[smoke]` table's overrides."""
    return {**at_scale(read_toml(path, "bench settings"), ("smoke",),
                       "smoke" if smoke else None, path), "smoke": smoke, "path": str(path)}


def peers_tasks(path: Path = PEERS) -> list[str]:
    """The peers bench's head-to-head tasks (its `qwen` scale's), which training must avoid."""
    data = read_toml(path, "peers bench settings")
    return list(data.get("qwen", {}).get("tasks") or data.get("tasks") or [])


def plan(settings: dict[str, Any], types_path: Path = TYPES,
         avoid: list[str] | None = None) -> dict[str, Any]:
    """The checked split: training, held-out and control types, arms and seeds."""
    classes = {t["task"]: t["class"] for t in read_toml(types_path, "task types")["type"]}
    train, held = list(settings["train"]), list(settings["held_out"])
    control, least = settings["control"], int(settings.get("min_types", 4))
    for name in [*train, *held, control]:
        if name not in classes:
            raise PlanError(f"{name} is not in {types_path}: measure it first with "
                            "`harness-learn bench task-types --write`")
    bad = [t for t in held if classes[t] not in ("headroom", "modest")]
    if bad or classes[control] != "control":
        raise PlanError(f"held-out types must be headroom or modest and the control a control "
                        f"type in {types_path}: check {', '.join(bad or [control])}")
    avoid = peers_tasks() if avoid is None else avoid
    for what, others in (("the held-out and control types", [*held, control]),
                         ("the peers bench's tasks", avoid)):
        if overlap := sorted(set(train) & set(others)):
            raise PlanError(f"training types overlap {what}: {', '.join(overlap)}; choose other "
                            f"`train` types in {settings.get('path', SETTINGS)}")
    if len(set(train)) < least or len(set(held)) < least:
        raise PlanError(f"want at least {least} training and {least} held-out types, got "
                        f"{len(set(train))} and {len(set(held))}")
    arms = list(settings.get("arms") or TEST_ARMS)
    if unknown := [a for a in arms if a not in TEST_ARMS]:
        raise PlanError(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(TEST_ARMS)}")
    return {"train": train, "held_out": held, "control": control, "arms": arms,
            "continual": bool(settings.get("continual", True)),
            "seeds": list(settings["seeds"])}


def write_split(out: Path, split: dict[str, Any]) -> None:
    """Write the split down before any run is scored; refuse another one in the same `out`."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / SPLIT
    if path.exists():
        held = json.loads(path.read_text())
        if held != split:
            raise PlanError(f"{path} fixes another split ({', '.join(held['held_out'])}); "
                            "use a new --out for this one")
        return
    path.write_text(json.dumps(split, indent=1))


def runs(out: Path, split: dict[str, Any]) -> list[Run]:
    """Every run in order: per seed the train phase, the test arms, then continual and
    retention."""
    libs = out / "libraries"
    order: list[Run] = []
    for seed in split["seeds"]:
        trained = str(libs / f"train-seed{seed}")
        order += [Run("train", t, seed, trained, "auto") for t in split["train"]]
        for task in [*split["held_out"], split["control"]]:
            for arm in split["arms"]:
                lib = str(libs / arm / f"{task.replace(':', '_')}-seed{seed}")
                order.append(Run(arm, task, seed, *((lib, "none", trained) if arm == "library"
                                                    else ("", "auto" if arm == "operators"
                                                          else "none"))))
        if split["continual"]:
            grown = str(libs / f"continual-seed{seed}")
            first = split["held_out"][0]
            order += [Run("continual", t, seed, grown, "none", trained if t == first else "")
                      for t in split["held_out"]]
            order += [Run("retention", t, seed,
                          str(libs / "retention" / f"{t.replace(':', '_')}-seed{seed}"), "none",
                          grown) for t in split["held_out"][:-1]]
    return order


def run_path(out: Path, run: Run) -> Path:
    return out / "runs" / run.arm / run.task.replace(":", "_") / f"seed{run.seed}"


Runner = Callable[[Run, Path, dict[str, Any], Any, Log], dict[str, Any]]


def finished(out: Path, split: dict[str, Any]) -> list[dict[str, Any]]:
    """The results of the runs of `split` finished in `out` so far, in order; nothing written
    (a look at a bench another process is running). `out` must hold this split."""
    path = out / SPLIT
    if not path.exists():
        raise PlanError(f"{path}: no bench here yet (run `harness-learn bench experience "
                        f"--out {out}` first)")
    if json.loads(path.read_text()) != split:
        raise PlanError(f"{path} fixes another split; give the settings that made it")
    done = (run_path(out, r) / "result.json" for r in runs(out, split))
    return [json.loads(p.read_text()) for p in done if p.exists()]


def run_all(out: Path, settings: dict[str, Any], split: dict[str, Any], runner: Runner,
            tests: Any = None, log: Log = print) -> list[dict[str, Any]]:
    """Every run of `split`, a finished one read back instead of run again."""
    write_split(out, split)
    results = []
    for r in runs(out, split):
        done = run_path(out, r) / "result.json"
        if done.exists():
            results.append(json.loads(done.read_text()))
            continue
        results.append(runner(r, out, settings, tests, log))
    return results


def task_options(settings: dict[str, Any], out: Path, task: str) -> dict[str, Any]:
    from harness_learning_lab.bench.peers import split_secret

    config = settings.get("task_configs", {}).get(task)
    return {"n_dev": settings["n_dev"], "n_test": settings["n_test"], "seed": 0,
            "split_secret": split_secret(out, task), **({"config": config} if config else {})}


def adapt_config(r: Run, run_dir: Path, settings: dict[str, Any], options: dict[str, Any]):
    """The run's AdaptConfig: every arm the same but for `operators` and `experience`."""
    from harness_learning.graphs.adapter.config import AdaptConfig

    return AdaptConfig(
        task=r.task, run_dir=str(run_dir), task_options=options, seed=r.seed,
        solver=settings["solver"], proposer=settings["proposer"],
        solver_params={"temperature": 0.0, "max_tokens": settings["solver_max_tokens"]},
        proposer_params={"temperature": 0.7, "max_tokens": settings["proposer_max_tokens"]},
        proposer_logprobs=False, rounds=settings["rounds"], candidates=settings["candidates"],
        policy=settings["policy"], edit_format=settings["edit_format"],
        repair_turns=settings["repair_turns"], operators=r.operators,
        operators_per_round=settings["operators_per_round"], feedback=settings["feedback"],
        selection=settings["selection"], patience=settings["patience"],
        concurrency=settings["concurrency"], experience=r.library,
        stop_when_perfect=r.arm != "train",  # the train phase fills the library: its rounds
        # after a perfect version are the evidence of what loses stacked on it
        **{k: settings[k] for k in PASSED if k in settings})


def run_one(r: Run, out: Path, settings: dict[str, Any], tests: Any, log: Log) -> dict[str, Any]:
    """Adapt, read the measures off the log, score seed and final version held out."""
    import asyncio
    import statistics

    from harness_learning.evals.registry import get_task
    from harness_learning.graphs.adapter.run import ConfigClash, prepare, run_adaptation
    from harness_learning_lab.bench.experience_measures import measures

    run_dir = run_path(out, r)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    if r.library_from and (r.arm != "continual" or not Path(r.library).exists()):
        copy_library(r.library_from, r.library)  # a run writes its library only as it ends
    options = task_options(settings, out, r.task)
    config = adapt_config(r, run_dir, settings, options)
    resumed = (run_dir / "config.json").exists()
    log(f"{'resume' if resumed else 'run'} {r.arm}/{r.task}/seed{r.seed} (operators "
        f"{r.operators}, library {r.library or 'none'})")
    start = time.perf_counter()
    try:
        run = prepare(config)
    except ConfigClash as exc:  # the settings changed since it started: it starts again
        log(f"  starting it again: {exc}")
        shutil.rmtree(run_dir)
        run = prepare(config)
    asyncio.run(run_adaptation(run.config, resume=True, context=run.context()))
    wall = time.perf_counter() - start
    found = measures(run_dir)
    task = get_task(r.task, **options)
    seed_problems = tests.problem_scores(task, found.pop("seed_source"))
    final_problems = tests.problem_scores(task, found.pop("final_source"))
    result = {**asdict(r), "held_out": round(statistics.mean(final_problems.values()), 4),
              "seed_held_out": round(statistics.mean(seed_problems.values()), 4),
              "final_problems": final_problems, "seed_problems": seed_problems, **found,
              "wall_s": round(wall, 1)}
    (run_dir / "result.json").write_text(json.dumps(result, indent=1))
    log(f"  held-out {result['seed_held_out']:.3f} -> {result['held_out']:.3f}, "
        f"{result['solver_calls']} Solver calls ({result['calls_to_final']} to the final "
        f"version), {result['wasted']}/{result['candidates']} wasted, {wall:.0f} s")
    return result


def test_scores(out: Path, settings: dict[str, Any]) -> Any:
    """Held-out scores by (type, version), kept in `OUT` (`peers.TestScores`), from a Solver
    client of the bench's own."""
    from harness_learning.harnesses.llm import get_client
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning_lab.bench.peers import TestScores

    params = {"temperature": 0.0, "max_tokens": settings["solver_max_tokens"]}

    def toolbox_for(task: Any) -> Any:
        return Toolbox(solver=get_client(settings["solver"]), retriever=task.retriever(),
                       solver_params=params)

    return TestScores(out, toolbox_for)
