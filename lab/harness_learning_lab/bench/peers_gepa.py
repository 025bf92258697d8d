"""GEPA (`gepa.optimize_anything`) on the harness source, with our evaluation as its evaluator.

GEPA's generalisation mode: `dataset` (its reflection minibatches) and `valset` (its Pareto
frontier and selection) are both our dev problems, as our adapter's feedback and selection
are; the candidate is the whole harness source (one text component). Each (candidate, problem)
pair GEPA asks about is one problem of our sandboxed evaluation; the side information it
reflects on is our execution report of that problem. The reflection model is the local Qwen
Proposer behind the counting proxy, reached through GEPA's own litellm client. GEPA stops when
the meter's Solver-call budget is spent (a stop callback reading our count, not GEPA's).

Settings come from `experiments/peers/gepa.toml` (GEPAConfig's `engine` and `reflection`
fields); the bench sets the run directory, seed, model endpoint and budget.

GEPA's background (its reflection prompt's domain context) is our Proposer's system text and
the harness contract. System `gepa` gets the contract without our building-block menu, as GEPA
is; `gepa+menu` gets it with the menu (`menu_text`, the same lines our Proposer reads and
OpenEvolve's `+menu` system message carries), so the bench can tell what the library gives
from what the search gives.
"""

from __future__ import annotations

import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness_learning.graphs.adapter.proposer import SYSTEM, constraints
from harness_learning_lab.bench.peers_meter import Meter

MENU_START, MENU_END = "- Building blocks", "- At most"
IMPORTS_WITH_BLOCKS = "\n  and the building blocks below only."


def menu_text(line_limit: int = 200) -> str:
    """The building-block paragraph of our Proposer's constraints: how to import a block and
    one line per block. Cut out of `constraints` so a peer reads exactly what ours reads."""
    text = constraints(line_limit)
    start, end = text.find(MENU_START), text.find(MENU_END)
    if start < 0 or end < start:
        raise ValueError(f"the Proposer's constraints no longer hold {MENU_START!r} before "
                         f"{MENU_END!r}: update peers_gepa.menu_text")
    return text[start:end].rstrip()


def background(line_limit: int, *, menu: bool) -> str:
    """GEPA's domain context: our system text and the harness contract, the block menu only
    when `menu` (without it, the imports allowed are those of a harness without blocks)."""
    text = constraints(line_limit)
    if not menu:
        if IMPORTS_WITH_BLOCKS not in text:
            raise ValueError("the Proposer's constraints no longer allow the building blocks "
                             "in one known line: update peers_gepa.background")
        text = text.replace(menu_text(line_limit) + "\n", "").replace(IMPORTS_WITH_BLOCKS,
                                                                    " only.")
    return f"{SYSTEM}\n\n{text}"


def batch_evaluator(meter: Meter):
    """GEPA's batch hook: the pairs of one candidate run together in one sandbox worker."""

    def run(pairs: list[tuple[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
        by_source: dict[str, list[int]] = defaultdict(list)
        for i, (source, _example) in enumerate(pairs):
            by_source[source].append(i)
        out: list[tuple[float, dict[str, Any]]] = [(0.0, {})] * len(pairs)
        for source, indexes in by_source.items():
            ids = [pairs[i][1]["id"] for i in indexes]
            if meter.exhausted:  # nothing more is run; GEPA's stopper ends the search next
                for i in indexes:
                    out[i] = (0.0, {"feedback": "budget exhausted: not run"})
                continue
            result = meter.evaluate(source, ids)
            for i, pid, r in zip(indexes, ids, result.results, strict=True):
                report = meter.report([pid], type(result)([r]), chars=1500)
                out[i] = (float(r.score or 0.0), {"feedback": report})
        return out

    return run


def load_settings(path: Path) -> dict[str, dict[str, Any]]:
    """`[engine]` and `[reflection]` tables of the peer's configuration file."""
    settings = tomllib.loads(path.read_text())
    unknown = set(settings) - {"engine", "reflection"}
    if unknown:
        raise ValueError(f"{path}: unknown tables {sorted(unknown)} (known: engine, reflection)")
    return {"engine": settings.get("engine", {}), "reflection": settings.get("reflection", {})}


def run_gepa(meter: Meter, seed_source: str, *, settings: dict[str, dict[str, Any]],
             proposer_url: str, proposer_alias: str, max_tokens: int, seed: int,
             run_dir: Path, line_limit: int, max_proposals: int, menu: bool = False) -> str:
    """Search until the meter's budget is spent; the best candidate's source (`menu`: the
    block menu in the reflection prompt)."""
    from gepa.optimize_anything import (
        EngineConfig,
        GEPAConfig,
        ReflectionConfig,
        optimize_anything,
    )

    examples = [{"id": p.id} for p in meter.problems]
    engine = EngineConfig(**{**settings["engine"], "run_dir": str(run_dir), "seed": seed,
                             "max_metric_calls": 100 * meter.budget,
                             "max_candidate_proposals": max_proposals,
                             "display_progress_bar": False})
    reflection = ReflectionConfig(**{
        **settings["reflection"],
        "reflection_lm": f"openai/{proposer_alias}",
        "reflection_lm_kwargs": {"api_base": proposer_url, "api_key": "local",
                                 "max_tokens": max_tokens, "seed": seed,
                                 **settings["reflection"].get("reflection_lm_kwargs", {})}})
    config = GEPAConfig(engine=engine, reflection=reflection,
                        stop_callbacks=[lambda _state: meter.exhausted])
    result = optimize_anything(
        seed_candidate=seed_source, batch_evaluator=batch_evaluator(meter), dataset=examples,
        valset=examples, objective=meter.task.description,
        background=background(line_limit, menu=menu), config=config)
    best = result.best_candidate
    return best if isinstance(best, str) else next(iter(best.values()))
