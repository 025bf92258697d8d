"""Probe every reasoning-gym scorer with adversarial answers; print which raise or are lenient.

Run: .venv/bin/python scripts/probe_rg_scorers.py [--n 3] [--raw]

Each line also flags `gold_not_full_credit` when the gold answer itself does not score 1.
A scorer is *lenient* when an answer that is not the gold earns credit: the gold buried in
junk, a long list of candidates, a huge number list. It *raises* when an odd answer (empty,
"None", a 100k-character string, non-ASCII) makes `score_answer` throw. Without `--raw` the
answers go through `evals.reasoning_tasks.ReasoningTask.score` (the guarded scorer) and every line
should then read clean; `--raw` shows the package's own behaviour.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import reasoning_gym  # noqa: E402

from harness_learning.evals.reasoning_tasks import generate_entries, known_tasks  # noqa: E402


def adversarial(gold: str, others: list[str]) -> dict[str, str]:
    numbers = " ".join(str(i) for i in range(-1000, 10001))
    return {
        "embedded": f"I think it could be many things, but {gold} is my guess, or not.",
        "candidates": " ".join([*others, gold, *others]) + " " + " ".join(map(str, range(200))),
        "gold_twice": f"{gold} {gold}",
        "gold_junk_tail": f"{gold} because the reasoning above shows this clearly",
        "numbers": numbers,
        "list_numbers": "[" + ", ".join(str(i) for i in range(-1000, 10001)) + "]",
    }


ODD = {"empty": "", "none": "None", "huge": "x" * 100_000, "unicode": "\u00e9\u2013\U0001f600",
       "json": "{\"a\": [1, 2}"}


def probe(name: str, n: int, raw: bool) -> tuple[dict, dict, float]:
    t0 = time.perf_counter()
    data = reasoning_gym.create_dataset(name, seed=12345, size=n)
    def make() -> list[dict]:
        if raw:  # the package as is: a fresh dataset, items by index
            fresh = reasoning_gym.create_dataset(name, seed=12345, size=n)
            return [fresh[i] for i in range(n)]
        return generate_entries(name, 12345, n)

    entries = make()
    elapsed = (time.perf_counter() - t0) / n
    lenient: dict[str, float] = {}
    raises: dict[str, str] = {}
    again = make()
    if any(again[i]["question"] != e["question"] or again[i]["answer"] != e["answer"]
           for i, e in enumerate(entries)):
        raises["determinism"] = "NOT REPRODUCIBLE"
    score = data.score_answer
    if not raw:
        from harness_learning.evals.reasoning_tasks import STRICT_MATCH, guarded_score

        def score(answer, entry):
            return guarded_score(data, answer, entry, strict=name in STRICT_MATCH)

    for k, entry in enumerate(entries):
        gold = str(entry["answer"])
        if entry["answer"] is not None:
            try:
                full = float(score(gold, entry))
            except Exception as exc:  # noqa: BLE001
                full = f"{type(exc).__name__}"
            if full != 1.0:
                raises["gold_not_full_credit"] = str(full)
        others = [str(e["answer"]) for j, e in enumerate(entries) if j != k]
        cases = {**adversarial(gold, others), **ODD}
        for label, answer in cases.items():
            if label not in ODD and answer.strip() == gold.strip():
                continue
            try:
                value = float(score(answer, entry))
            except Exception as exc:  # noqa: BLE001 - recording what the package does
                raises[label] = type(exc).__name__
                continue
            if value > 0 and label not in ("empty", "none") or value > 0.0 and gold in ("", "None"):
                lenient[label] = max(lenient.get(label, 0.0), value)
    return lenient, raises, elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    n_lenient = n_raise = 0
    for name in args.names or known_tasks():
        try:
            lenient, raises, per_item = probe(name, args.n, args.raw)
        except Exception as exc:  # noqa: BLE001
            print(f"{name:28s} GENERATION FAILED {type(exc).__name__}: {exc}")
            continue
        n_lenient += bool(lenient)
        n_raise += bool(raises)
        flags = []
        if lenient:
            flags.append("lenient " + ",".join(f"{k}={v:.2f}" for k, v in sorted(lenient.items())))
        if raises:
            flags.append("raises " + ",".join(f"{k}:{v}" for k, v in sorted(raises.items())))
        print(f"{name:28s} {per_item * 1000:8.1f} ms/item  {'; '.join(flags) or 'clean'}")
    print(f"lenient: {n_lenient}  raising: {n_raise}  ({'raw package' if args.raw else 'guarded'})")


if __name__ == "__main__":
    main()
