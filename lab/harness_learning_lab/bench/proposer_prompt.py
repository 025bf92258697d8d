"""`bench proposer-prompt`: does a 1.5B Proposer follow the prompt? The old prompt against the new.

A committed set of logged reports (`data/proposer_reports.jsonl`: each the seed harness, its task
and the report its feedback problems produced) is answered by the Proposer with each prompt:

- old: the whole-program view with SEARCH/REPLACE edits, one sample;
- new: a focused edit of one node function (round-robin over the graph's nodes) with the blocks
  as a menu, plus its second chances (a resample for a no-op or a duplicate, one repair turn
  for an unusable answer: `graphs.adapter.repair`).

valid rate = valid outcomes / every Proposer completion (repairs and resamples included);
a candidate is valid as the one judge says, evaluated on the row's selection problems with the
bench's Solver. The second figure is the share of valid candidates that change at least one
selection prediction (a valid edit that changes nothing is not progress); the third, how many
score higher than the seed on those problems (a changed prediction may be a worse one).
Results are kept per (row, prompt) in `--out`, so a rerun resumes.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_learning.evals.evaluator import evaluate
from harness_learning.evals.judge import check_candidate, judge_candidate
from harness_learning.evals.registry import get_task
from harness_learning.evals.splits import sample_round
from harness_learning.evals.stats import clopper_pearson
from harness_learning.graphs.adapter.execution_report import build_report
from harness_learning.graphs.adapter.proposer import build_focused_messages, build_proposer_messages
from harness_learning.graphs.adapter.repair import second_chances
from harness_learning.harnesses.edits.function_edit import node_functions
from harness_learning.harnesses.llm import ModelConfig, get_client
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox

REPORTS = Path(__file__).parent / "data" / "proposer_reports.jsonl"
PLAN = {"rg:products": 8, "rg:chain_sum": 8, "rg:letter_counting": 8, "musique": 6}
"""Reports collected per task (3 reasoning tasks and 1 QA task, 30 in all)."""
FEEDBACK, SELECTION, REPORT_CHARS = 4, 4, 2500
PROMPTS = ("old", "new")


def task_of(name: str, data: Path | None, index: Path | None) -> Any:
    if name == "musique":
        return get_task(name, path=str(data), index_dir=str(index), n_dev=40, n_test=4)
    return get_task(name, n_dev=40, n_test=4)


async def collect(solver: str, data: Path | None, index: Path | None,
                  log: Callable[[str], None]) -> list[dict]:
    """The report rows: per task, the seed on `PLAN[task]` feedback samples."""
    toolbox_of = {}
    rows = []
    for name, count in PLAN.items():
        task = task_of(name, data, index)
        toolbox_of[name] = Toolbox(solver=get_client(solver), retriever=task.retriever(),
                                   solver_params={"temperature": 0.0, "max_tokens": 192})
        source = seed_source(task.seed)
        for k in range(count):
            feedback, selection = sample_round(task.dev(), k + 1, 7, FEEDBACK, SELECTION)
            result = await evaluate(source, feedback, task, toolbox_of[name], concurrency=2)
            report = build_report(task, feedback, result, budget_chars=REPORT_CHARS)
            rows.append({"id": f"{name}#{k}", "task": name, "track": task.track,
                         "description": task.description, "source": source, "report": report,
                         "selection": [p.id for p in selection]})
            log(f"report {rows[-1]['id']}: feedback mean {result.mean_score:.2f}")
    return rows


async def answer(row: dict, prompt: str, proposer: Any, selection: list,
                 evaluate_on: Callable, seed: int) -> dict:
    """One row answered with one prompt: every attempt's outcome, the final one's validity and
    whether it changed a selection prediction."""
    source, track = row["source"], row["track"]
    rules = {"track": track, "line_limit": 200}
    if prompt == "old":
        fmt = "search_replace"
        messages = build_proposer_messages(row["description"], source, row["report"], fmt, 200)
    else:
        fmt = "function"
        nodes = node_functions(source)
        messages = build_focused_messages(row["description"], source, row["report"],
                                          nodes[seed % len(nodes)])
    attempts: list[str | None] = []

    async def sample(msgs, s):
        return await proposer.acomplete(msgs, temperature=0.7, max_tokens=512, seed=s)

    async def judged(completion, attempt):
        outcome = check_candidate(source, completion.text, fmt, completion.finish_reason, **rules)
        attempts.append(outcome.invalid_kind)
        return outcome

    async def known(outcome):
        return False

    _, completion, _ = await second_chances(messages, seed, source, sample, judged, known,
                                            turns=0 if prompt == "old" else 1)

    final = await judge_candidate(source, completion.text, fmt, completion.finish_reason,
                                  selection=selection, evaluate=evaluate_on, **rules)
    changed = gain = None
    if final.valid:
        parent = await evaluate_on(source, selection)
        mine = await evaluate_on(final.new_source, selection)
        changed = any(a.answer != b.answer for a, b in zip(parent.results, mine.results,
                                                            strict=True))
        gain = mine.mean_score - parent.mean_score
    return {"id": row["id"], "prompt": prompt, "attempts": attempts, "valid": final.valid,
            "kind": final.invalid_kind, "reason": final.invalid_reason, "changed": changed,
            "selection_gain": gain,
            "completion": completion.text[:4000]}


def interleaved(rows: list[dict]) -> list[dict]:
    """The rows taken in turn from each task, so the first N of them cover every task."""
    by_task: dict[str, list[dict]] = {}
    for row in rows:
        by_task.setdefault(row["task"], []).append(row)
    queues = list(by_task.values())
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def summary(results: list[dict]) -> list[dict]:
    """Per prompt: completions, valid outcomes, the valid rate, valid-and-changed, kinds."""
    rows = []
    for prompt in PROMPTS:
        mine = [r for r in results if r["prompt"] == prompt]
        completions = sum(len(r["attempts"]) for r in mine)
        valid = sum(1 for r in mine if r["valid"])
        changed = sum(1 for r in mine if r["changed"])
        kinds = Counter(k for r in mine for k in r["attempts"] if k is not None)
        gains = [r.get("selection_gain") for r in mine if r["valid"]]
        better = None if None in gains else sum(1 for g in gains if g > 0)
        low, high = clopper_pearson(valid, completions) if completions else (0.0, 1.0)
        rows.append({"prompt": prompt, "reports": len(mine), "completions": completions,
                     "valid": valid, "valid_rate": round(valid / completions, 3) if completions else 0.0,
                     "valid_rate_ci95": [round(low, 3), round(high, 3)],
                     "valid_changing": changed,
                     "changing_share": round(changed / valid, 3) if valid else 0.0,
                     "valid_better": better,
                     "invalid_kinds": dict(kinds.most_common())})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| prompt | reports | completions | valid | valid rate (95% CI) | valid that change "
             "a prediction | valid that score higher on selection | invalid kinds (all attempts) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        kinds = ", ".join(f"{k} {v}" for k, v in r["invalid_kinds"].items()) or "-"
        low, high = r["valid_rate_ci95"]
        # results stored before the gain was kept have none: n/a, not a count of some
        better = "n/a" if r["valid_better"] is None else str(r["valid_better"])
        lines.append(f"| {r['prompt']} | {r['reports']} | {r['completions']} | {r['valid']} | "
                     f"{r['valid_rate']:.3f} [{low:.3f}, {high:.3f}] | "
                     f"{r['valid_changing']} ({r['changing_share']:.3f}) | {better} | {kinds} |")
    return "\n".join(lines)


def run(out: Path, proposer: str, solver: str, data: Path | None, index: Path | None,
        limit: int | None, log: Callable[[str], None] = print) -> list[dict]:
    """Answer every committed report with both prompts (resumed from `out`)."""
    rows = interleaved([json.loads(line) for line in REPORTS.read_text().splitlines()
                        if line.strip()])
    rows = rows[:limit] if limit else rows
    out.mkdir(parents=True, exist_ok=True)
    client = get_client(ModelConfig.coerce(proposer).with_(local_server="proposer"))
    tasks: dict[str, Any] = {}
    cache: dict[tuple[str, tuple[str, ...]], Any] = {}

    results = []
    for i, row in enumerate(rows):
        task = tasks.setdefault(row["task"], task_of(row["task"], data, index))
        by_id = {p.id: p for p in task.dev()}
        selection = [by_id[j] for j in row["selection"]]
        toolbox = Toolbox(solver=get_client(solver), retriever=task.retriever(),
                          solver_params={"temperature": 0.0, "max_tokens": 192})

        async def evaluate_on(source: str, problems: list, task=task, toolbox=toolbox) -> Any:
            key = (source, tuple(p.id for p in problems))
            if key not in cache:
                cache[key] = await evaluate(source, problems, task, toolbox, concurrency=2)
            return cache[key]

        for prompt in PROMPTS:
            path = out / f"{row['id'].replace(':', '_').replace('#', '-')}__{prompt}.json"
            if not path.exists():
                got = asyncio.run(answer(row, prompt, client, selection, evaluate_on, seed=i))
                path.write_text(json.dumps(got))
                log(f"{row['id']} {prompt}: attempts {got['attempts']} -> "
                    f"{'valid' if got['valid'] else got['kind']}")
            results.append(json.loads(path.read_text()))
    return summary(results)
