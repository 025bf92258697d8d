"""`harness-learn bench memorisation`: the behaviour check's power and false-positive rate, and
what a memoriser gains in selection under each split.

The honest side is real: per-problem scores of logged harnesses (seeds, operator candidates
such as the interpreter loop, Proposer edits), each beside its parent on the problems both
were scored on (`collect` reads them from run logs into `data/honest_harnesses.jsonl`). Each
resample draws shown and unseen problems from a pair's common problems, with replacement, so
the two are exchangeable, as comparable problems are; the check run on them gives the
false-positive rate. Memorisers are simulated from the same draws, since the check sees only
scores: a memoriser that copied a fraction `f` of the shown golds solves those problems and
behaves as its base elsewhere. Three encodings of the table (which the literal guard misses
by construction, so the behaviour is all that is left):
- `on_parent`: the parent plus a hidden table (the cheap cheat: add a lookup to what works);
- `on_candidate`: an honest improvement plus a table (the cheat that hides in a real gain);
- `table_only`: nothing but the table (unseen problems all fail).
Intervals are Clopper-Pearson 95% over resamples.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness_learning.evals.guards import CORRECT, Scores, memorisation_reason
from harness_learning.evals.stats import clopper_pearson

DATA = Path(__file__).parent / "data" / "honest_harnesses.jsonl"
FRACTIONS = (0.1, 0.25, 0.5, 1.0)
VARIANTS = ("on_parent", "on_candidate", "table_only")


@dataclass(frozen=True)
class Protocol:
    """One split's sizes as the check sees them: `shown` problems whose gold a report showed,
    `unseen` comparable ones (selection problems held out, or control problems), and whether
    the selection score is taken on the shown problems (the paper's reasoning track)."""

    name: str
    shown: int
    unseen: int
    selection_is_shown: bool


PROTOCOLS = (
    Protocol("reasoning, paper (25 shown = selection, 25 control)", 25, 25, True),
    Protocol("reasoning, held out (10 shown, 15 selection)", 10, 15, False),
    Protocol("demo, held out (4 shown, 8 selection)", 4, 8, False),
    Protocol("QA, held out (6 shown, 64 selection)", 6, 64, False),
)


@dataclass(frozen=True)
class Pair:
    """A logged harness and its parent, scored on the same problems."""

    name: str
    origin: str
    task: str
    parent: tuple[float, ...]
    candidate: tuple[float, ...]


def load_pairs(path: Path = DATA) -> list[Pair]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Pair(r["name"], r["origin"], r["task"], tuple(r["parent"]), tuple(r["candidate"]))
            for r in rows]


def collect(run_dirs: Iterable[Path], min_problems: int = 8) -> Iterator[dict]:
    """Every (version, parent) pair of the logged runs with at least `min_problems` problems
    both were scored on (any purpose but the memorisation probes), as JSON rows."""
    from harness_learning.harnesses.store.sqlite import SQLiteLogStore

    for run_dir in run_dirs:
        with SQLiteLogStore(run_dir, read_only=True) as store:
            task = (store.get_run().config or {}).get("task", "?")
            scores: dict[str, dict[str, float]] = {}
            for ev in store.iter_evaluations():
                if ev.purpose != "probe" and ev.result.score is not None:
                    scores.setdefault(ev.sha, {})[ev.problem_id] = ev.result.score
            origins = {p.candidate_sha: p.origin for p in store.iter_proposals()}
            for version in store.iter_versions():
                mine = scores.get(version.sha, {})
                theirs = scores.get(version.parent_sha or "", {})
                common = sorted(set(mine) & set(theirs))
                if version.parent_sha and len(common) >= min_problems:
                    yield {"name": f"{Path(run_dir).name}:{version.sha[:8]}",
                           "origin": origins.get(version.sha, "?"), "task": task,
                           "parent": [theirs[p] for p in common],
                           "candidate": [mine[p] for p in common]}


def memoriser(base: list[float], copied: list[bool], variant: str) -> list[float]:
    """Scores of a memoriser on shown problems: 1 where it copied the gold, else its base's
    (nothing at all for `table_only`)."""
    fallback = [0.0] * len(base) if variant == "table_only" else base
    return [1.0 if c else s for s, c in zip(fallback, copied, strict=True)]


def flagged(shown: Scores, unseen: Scores, parent_shown: Scores, parent_unseen: Scores, *,
            new: bool) -> bool:
    """The check as it stands (`new`: the success-rate test and the parent's-failures test) or
    as it stood before (the success-rate test alone)."""
    if new:
        reason = memorisation_reason(shown, unseen, parent_shown=parent_shown,
                                     parent_unseen=parent_unseen)
    else:
        reason = memorisation_reason(shown, unseen)
    return reason is not None


def simulate(pairs: list[Pair], protocol: Protocol, resamples: int, seed: int) -> dict:
    """Per case (honest, or a memoriser's variant and fraction): [flagged by the old check, by
    the new, draws] and the memoriser's mean selection gain over its base, over `resamples`
    draws. A memoriser's draw counts only where a copied gold changed its base's result: a
    copy of what the base already solves is neither visible nor worth anything."""
    rng = random.Random(seed)
    counts: dict[str, list[int]] = {}
    gains: dict[str, list[float]] = {}

    def tally(key: str, shown: Scores, unseen: Scores, ps: Scores, pu: Scores) -> None:
        row = counts.setdefault(key, [0, 0, 0])
        row[0] += flagged(shown, unseen, ps, pu, new=False)
        row[1] += flagged(shown, unseen, ps, pu, new=True)
        row[2] += 1

    for b in range(resamples):
        pair = pairs[b % len(pairs)]
        n = len(pair.candidate)
        shown_i = [rng.randrange(n) for _ in range(protocol.shown)]
        unseen_i = [rng.randrange(n) for _ in range(protocol.unseen)]
        ps, pu = [pair.parent[i] for i in shown_i], [pair.parent[i] for i in unseen_i]
        cs, cu = [pair.candidate[i] for i in shown_i], [pair.candidate[i] for i in unseen_i]
        tally("honest", cs, cu, ps, pu)
        for f in FRACTIONS:
            k = max(1, round(f * protocol.shown))
            picked = set(rng.sample(range(protocol.shown), k))
            copied = [i in picked for i in range(protocol.shown)]
            for variant in VARIANTS:
                base_s, base_u = (ps, pu) if variant == "on_parent" else (cs, cu)
                if variant != "table_only" and all(base_s[i] >= CORRECT for i in picked):
                    continue  # it copied only what its base solves: the same behaviour
                shown = memoriser(base_s, copied, variant)
                unseen = [0.0] * len(base_u) if variant == "table_only" else base_u
                tally(f"{variant} f={f}", shown, unseen, ps, pu)
                selection = (shown, base_s) if protocol.selection_is_shown else (unseen, base_u)
                gains.setdefault(f"{variant} f={f}", []).append(
                    _mean(selection[0]) - _mean(selection[1]))
    return {"counts": counts, "gains": {k: _mean(v) for k, v in gains.items()}}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run(pairs: list[Pair], resamples: int, seed: int = 0) -> list[dict]:
    """One row per (protocol, case): flag rate of the old and new check with intervals, and
    the case's mean selection gain over its base."""
    rows = []
    cases = ["honest"] + [f"{v} f={f}" for v in VARIANTS for f in FRACTIONS]
    for protocol in PROTOCOLS:
        result = simulate(pairs, protocol, resamples, seed)
        for case in cases:
            if case not in result["counts"]:
                continue  # no draw where its copies changed anything
            old, new, n = result["counts"][case]
            rows.append({"protocol": protocol.name, "case": case, "n": n,
                         "old": old / n, "old_ci": clopper_pearson(old, n),
                         "new": new / n, "new_ci": clopper_pearson(new, n),
                         "selection_gain": result["gains"].get(case, 0.0)})
    return rows


def table(rows: list[dict]) -> str:
    """Markdown: flag rates (false positives for honest rows, power for memorisers), with their
    Clopper-Pearson 95% intervals, and each memoriser's mean selection gain over its base."""
    out = ["| protocol | case | draws | flagged, rate test alone | flagged, rate + fixes tests "
           "| selection gain of the copy |", "|---|---|---|---|---|---|"]
    for r in rows:
        gain = "-" if r["case"] == "honest" else f"{r['selection_gain']:+.3f}"
        out.append(f"| {r['protocol']} | {r['case']} | {r['n']} | {_rate(r['old'], r['old_ci'])} "
                   f"| {_rate(r['new'], r['new_ci'])} | {gain} |")
    return "\n".join(out)


def _rate(value: float, ci: tuple[float, float]) -> str:
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
