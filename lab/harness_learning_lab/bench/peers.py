"""`harness-learn bench peers`: our adapter against GEPA and OpenEvolve on equal terms.

Every system gets, per (task, seed): the same seed harness, the same Solver (the scale's
`solver_model`: SmolLM2-135M unless set; Qwen2.5-Coder-1.5B in `qwen`) and Proposer or
reflection model (Qwen2.5-Coder-1.5B), each on its own llama.cpp loopback server,
the same dev problems to learn from, the same Solver-call budget for its search, counted at our
meter (`peers_meter`), and the same held-out test problems. What a system would hand back is
tested on the held-out problems each time it changes: the anytime curve of held-out score
against Solver calls spent. Test evaluations use a separate, uncounted Solver client.

The bench's settings are `experiments/peers/bench.toml` (its `[smoke]` table for a run of
seconds, a scale's own `[SCALE.smoke]` for `--scale SCALE --smoke`); each peer's own settings
sit beside it. A finished run is stored as
`OUT/runs/<task>/<system>/seed<k>/result.json` and never redone; an unfinished one is started
again from scratch, so the command is resumable. A run during which the Proposer's server
stopped answering is not stored (`ProposerUnreachable`). Beside each result, `proposer.jsonl`
holds every request the system's Proposer answered and the answer. `OUT/splits.json` keeps
the split secret of each task, so every system and seed sees the same problems.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_learning_lab.bench.peers_meter import Meter, ProposerProxy, sha_of
from harness_learning_lab.bench.peers_report import at
from harness_learning_lab.bench.peers_systems import PEERS_DIR, run_system
from harness_learning_lab.scaled_toml import at_scale, merge, read_toml

Log = Callable[[str], None]
SETTINGS = PEERS_DIR / "bench.toml"
SCALES = ("cpu", "racing", "qwen", "equal", "smoke")
"""Tables of bench.toml that resize the run; `full` is its top level."""


class ProposerUnreachable(RuntimeError):
    """The Proposer's server stopped answering during a run: a system that lost Proposer calls
    was not measured on equal terms, so its run is not stored (a finished-looking run with no
    Proposer tokens would be read back as a result)."""


@dataclass
class Endpoints:
    """The two model servers every system shares: OpenAI-compatible base URLs and aliases.
    `solver_url` may name several replicas of the Solver, comma-separated."""

    solver_url: str
    solver_alias: str
    proposer_url: str
    proposer_alias: str


@contextlib.contextmanager
def endpoints(solver: str = "", proposer: str = "", solver_model: str = "",
              solver_replicas: int = 1) -> Iterator[Endpoints]:
    """The given servers (`ALIAS@URL`, the Solver's as `ALIAS@URL1,URL2` for replicas), or the
    local models started on loopback, one thread each (stopped on the way out): the Solver
    `solver_model` (SmolLM2-135M by default) as `solver_replicas` servers, which answer a
    system's two problems at once on two cores; the Proposer Qwen2.5-Coder-1.5B. The same model
    in both roles still gets servers of its own, so the Proposer's tokens are counted apart
    and neither waits on the other's queue."""
    from harness_learning.harnesses.llm.local import LocalServer
    from harness_learning.harnesses.llm.models import QWEN_CODER, SMOLLM2, local_model

    started: list[LocalServer] = []

    def reach(spec: str, name: str) -> tuple[str, str]:
        if spec:
            alias, sep, url = spec.partition("@")
            if not sep or not url.startswith("http"):
                raise ValueError(f"{spec!r}: want ALIAS@http://HOST:PORT/v1")
            return url, alias
        server = LocalServer(name)
        started.append(server)
        return server.start(timeout_s=300), local_model(name).alias

    try:
        replicas = [reach(solver, solver_model or SMOLLM2)
                    for _ in range(1 if solver else max(1, solver_replicas))]
        solver_url, solver_alias = ",".join(url for url, _ in replicas), replicas[0][1]
        proposer_url, proposer_alias = reach(proposer, QWEN_CODER)
        yield Endpoints(solver_url, solver_alias, proposer_url, proposer_alias)
    finally:
        for server in started:
            server.stop()


def load_settings(path: Path = SETTINGS, scale: str = "full",
                  smoke: bool = False) -> dict[str, Any]:
    """The top-level settings (`full`), or with a named table's overrides (`smoke`, `cpu`);
    `smoke` with a scale: that scale's own `[SCALE.smoke]` sizes on top (a quick look at the
    same arms and models), and with `full` the `[smoke]` table."""
    data = read_toml(path, "bench settings")
    if smoke and scale in ("full", "smoke"):
        scale, smoke = "smoke", False
    if scale == "full":
        return at_scale(data, SCALES, None, path)
    settings = at_scale(data, SCALES, scale, path)
    small = settings.pop("smoke", None)  # the scale's own [SCALE.smoke]
    if not smoke:
        return {**settings, "scale": scale}
    if small is None:
        raise ValueError(f"{path} has no [{scale}.smoke] table for --scale {scale} --smoke")
    return {**merge(settings, small), "scale": f"{scale}.smoke"}


def split_secret(out: Path, task: str) -> str:
    """One secret per task for the whole bench: the same dev and test problems for all."""
    from harness_learning.evals.reasoning_tasks import new_split_secret

    path = out / "splits.json"
    secrets = json.loads(path.read_text()) if path.exists() else {}
    if task not in secrets:
        secrets[task] = new_split_secret()
        path.write_text(json.dumps(secrets, indent=2))
    return secrets[task]


def task_options(settings: dict[str, Any], out: Path, task: str) -> dict[str, Any]:
    options: dict[str, Any] = {"n_dev": settings["n_dev"], "n_test": settings["n_test"], "seed": 0}
    if task.startswith("rg:"):
        config = settings.get("task_configs", {}).get(task)
        return {**options, "split_secret": split_secret(out, task),
                **({"config": config} if config else {})}
    from harness_learning_lab.bench.qa_floor import sample_index

    return {**options, "index_dir": str(sample_index(task, out))}


def solver_client(ends: Endpoints, cache: Path, max_tokens: int):
    """A client of its own (not the shared one of `get_client`), so its counters are one run's;
    all share the response cache, which saves wall time but not counted calls."""
    from harness_learning.harnesses.llm import ModelClient, ModelConfig

    return ModelClient(ModelConfig(model=f"openai/{ends.solver_alias}",
                                  api_base=ends.solver_url.split(","),
                                  api_key="local", cache=str(cache), max_concurrency=1,
                                  timeout_s=600.0, params={"temperature": 0.0,
                                                           "max_tokens": max_tokens}))


def base_config(settings: dict[str, Any], ends: Endpoints, proxy: ProposerProxy, task: str,
                seed: int, options: dict[str, Any]) -> dict[str, Any]:
    """The AdaptConfig fields every run of ours shares (the peers read the same numbers)."""
    from harness_learning.evals.registry import track_of

    track = track_of(task, options)
    rounds = max(1, settings["max_proposals"] // settings["candidates"])
    return {"task": task, "task_options": options, "seed": seed, "rounds": rounds,
            "solver": f"openai/{ends.solver_alias}@{ends.solver_url}",
            "proposer": (f"openai/{ends.proposer_alias}@{proxy.base_url}"
                         "?max_concurrency=1&timeout_s=1800&api_key=local"),
            "solver_params": {"temperature": 0.0, "max_tokens": settings["solver_max_tokens"]},
            "proposer_params": {"temperature": 0.7,
                                "max_tokens": settings["proposer_max_tokens"]},
            "proposer_logprobs": False, "candidates": settings["candidates"],
            "feedback": settings["feedback"], "selection": settings["n_dev"],
            "budget": settings["budget"], "concurrency": settings["concurrency"],
            "edit_format": settings.get("edit_format") or (
                "search_replace" if track == "reasoning" else "whole_program"),
            "line_limit": settings.get("line_limit", 200),
            "repair_turns": settings.get("repair_turns", 1),
            "operators_per_round": settings.get("operators_per_round", 2),
            "max_proposals": settings["max_proposals"],
            "experience": str(settings.get("experience") or "")}


def library_path(settings: dict[str, Any], out: str | Path) -> str:
    """The `+lib` systems' library (`experience`; a relative path is under the bench's
    `out`), `{seed}` left for the run to fill in; empty: each run starts with an empty one."""
    given = str(settings.get("experience") or "")
    if not given or "://" in given or Path(given).is_absolute():
        return given
    return str(Path(out) / given)


class TestScores:
    """Held-out scores by (task, sha), kept in `OUT/test_scores.json` (never recomputed), and
    each problem's score in `OUT/test_problems.json` (for paired intervals; a mean cached
    before those were kept is reused for the curve, computed again only when asked for)."""

    def __init__(self, out: Path, toolbox_for: Callable[[Any], Any]) -> None:
        self.path, self.problems_path = out / "test_scores.json", out / "test_problems.json"
        self.scores = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.problems: dict[str, dict[str, float]] = (
            json.loads(self.problems_path.read_text()) if self.problems_path.exists() else {})
        self.toolbox_for = toolbox_for

    def _evaluate(self, task: Any, source: str, key: str) -> None:
        import asyncio

        from harness_learning.evals.evaluator import evaluate

        problems = task.test()
        result = asyncio.run(evaluate(source, problems, task, self.toolbox_for(task),
                                      concurrency=2))
        self.scores[key] = result.mean_score or 0.0
        self.problems[key] = {p.id: float(r.score or 0.0)
                              for p, r in zip(problems, result.results, strict=True)}
        self.path.write_text(json.dumps(self.scores, indent=1, sort_keys=True))
        self.problems_path.write_text(json.dumps(self.problems, sort_keys=True))

    def score(self, task: Any, source: str) -> float:
        key = f"{task.name}:{sha_of(source)}"
        if key not in self.scores:
            self._evaluate(task, source, key)
        return self.scores[key]

    def problem_scores(self, task: Any, source: str) -> dict[str, float]:
        """Held-out score per problem id of `source` on `task`."""
        key = f"{task.name}:{sha_of(source)}"
        if key not in self.problems:
            self._evaluate(task, source, key)
        return self.problems[key]


def one_run(settings: dict[str, Any], ends: Endpoints, proxy: ProposerProxy, out: Path,
            system: str, task_name: str, seed: int, tests: TestScores, log: Log) -> dict:
    """Run (or read back) one system on one task and seed."""
    from harness_learning.evals.registry import get_task
    from harness_learning.harnesses.seeds import seed_source
    from harness_learning.harnesses.toolbox import Toolbox

    run_dir = run_path(out, task_name, system, seed)
    done = run_dir / "result.json"
    if done.exists():
        return stored(done, settings)
    shutil.rmtree(run_dir, ignore_errors=True)  # an unfinished run starts again
    run_dir.mkdir(parents=True)
    options = task_options(settings, out, task_name)
    task = get_task(task_name, **options)
    solver = solver_client(ends, out / "solver_cache.sqlite", settings["solver_max_tokens"])
    toolbox = Toolbox(solver=solver, retriever=task.retriever(),
                      solver_params={"temperature": 0.0, "max_tokens": settings["solver_max_tokens"]})
    meter = Meter(task, task.dev(), toolbox, settings["budget"],
                  concurrency=settings["concurrency"], line_limit=settings.get("line_limit", 200))
    label = f"{task_name}/{system}/{seed}"
    proxy.label = label
    proxy.transcript = run_dir / "proposer.jsonl"
    # OpenEvolve cannot be told to stop: its Proposer calls are refused once the budget is spent
    proxy.stop_when = (lambda: meter.exhausted) if system.startswith("openevolve") else None
    log(f"run {label} (budget {settings['budget']} Solver calls)")
    start = time.perf_counter()
    try:
        base = base_config(settings, ends, proxy, task_name, seed, options)
        base["experience"] = library_path(settings, out)
        run_system(system, meter, seed_source(task.seed), base, run_dir,
                   proposer_url=proxy.base_url, proposer_alias=ends.proposer_alias)
    finally:
        proxy.stop_when, proxy.transcript = None, None
        meter.close()
    wall = time.perf_counter() - start
    if proxy.failed.get(label):
        raise ProposerUnreachable(f"{label}: {proxy.failed[label]} Proposer request(s) got no "
                                  f"answer from {proxy.upstream}; the run is not recorded")
    seed_text = seed_source(task.seed)
    result = {"system": system, "task": task_name, "seed": seed,
              **measured(meter, tests, task, seed_text, settings["budget"]),
              **proxy.spent(label), "wall_s": round(wall, 1)}
    done.write_text(json.dumps(result, indent=1))
    reseeds = result["proposer_reseeded"]
    reseeded = f" ({reseeds} {'repeat' if reseeds == 1 else 'repeats'} reseeded)" if reseeds else ""
    log(f"  {label}: held-out {result['final_test']:.3f} after {result['solver_calls']} Solver "
        f"calls, {result['proposer_tokens']} Proposer tokens{reseeded}, {wall:.0f} s")
    return result


def measured(meter: Meter, tests: TestScores, task: Any, seed_text: str,
             budget: int) -> dict[str, Any]:
    """A finished search's anytime curve (each incumbent tested on the held-out problems),
    its final held-out score and per-problem scores at the budget, and its Solver calls."""
    points = meter.trace.points or [(0, sha_of(seed_text), None)]
    points = [(0, *points[0][1:]), *points[1:]]  # the start harness is known before any call
    curve = [{"solver_calls": calls, "sha": sha, "selection": sel,
              "test": tests.score(task, meter.trace.sources.get(sha) or seed_text)}
             for calls, sha, sel in points]
    final_sha = at(curve, budget, key="sha")  # a later take-over does not count
    final_source = meter.trace.sources.get(final_sha) or seed_text
    return {"curve": curve, "budget": budget, "final_test": at(curve, budget),
            "final_problems": tests.problem_scores(task, final_source),
            "solver_calls": meter.solver_calls}


def stored(path: Path, settings: dict[str, Any]) -> dict:
    """A finished run's result, refused when it was run at another budget (another scale's
    run in the same directory would otherwise be read back as this one's)."""
    result = json.loads(path.read_text())
    if result.get("budget", settings["budget"]) != settings["budget"]:
        raise ValueError(f"{path} was run with a budget of {result['budget']} Solver calls, "
                         f"not {settings['budget']}")
    return result


def run_path(out: Path, task: str, system: str, seed: int) -> Path:
    return out / "runs" / task.replace(":", "_") / system / f"seed{seed}"


def result_paths(out: Path, settings: dict[str, Any]) -> list[Path]:
    """Where each run of the grid keeps its result, in the order the grid is run."""
    return [run_path(out, task, system, seed) / "result.json" for seed in settings["seeds"]
            for task in settings["tasks"] for system in settings["systems"]]


def finished(out: Path, settings: dict[str, Any]) -> list[dict] | None:
    """Every run's stored result when all of them are finished (then no model is started),
    else None."""
    paths = result_paths(out, settings)
    if not all(p.exists() for p in paths):
        return None
    return [stored(p, settings) for p in paths]


def finished_so_far(out: Path, settings: dict[str, Any]) -> list[dict]:
    """The stored results of the grid's runs finished so far (a grid of many hours is read
    while it runs, or between the sittings it takes)."""
    return [stored(p, settings) for p in result_paths(out, settings) if p.exists()]


def run(out: Path, settings: dict[str, Any], ends: Endpoints, log: Log = print) -> list[dict]:
    """Every (task, seed, system) of `settings`, in an order that gives every system a result
    early (seed-major), into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    proxy = ProposerProxy(ends.proposer_url)
    test_solver = solver_client(ends, out / "solver_cache.sqlite", settings["solver_max_tokens"])

    def toolbox_for(task: Any) -> Any:
        from harness_learning.harnesses.toolbox import Toolbox

        return Toolbox(solver=test_solver, retriever=task.retriever(),
                       solver_params={"temperature": 0.0,
                                      "max_tokens": settings["solver_max_tokens"]})

    tests = TestScores(out, toolbox_for)
    order = [(seed, task, system) for seed in settings["seeds"] for task in settings["tasks"]
             for system in settings["systems"]]
    results = []
    try:
        for k, (seed, task, system) in enumerate(order, 1):
            def counted(msg: str, k: int = k) -> None:
                log(f"[{k}/{len(order)}] {msg}")

            results.append(one_run(settings, ends, proxy, out, system, task, seed, tests,
                                   counted))
    finally:
        proxy.close()
    return results
