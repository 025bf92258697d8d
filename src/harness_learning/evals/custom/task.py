"""`DataTask`: a data file and a metric as a `Task`.

The examples are split once into a dev pool (feedback and selection are drawn from it each
round) and a held-out test set, fixed by `seed`: by default 60/40, like the small QA samples.
A problem's `inputs` are the example's public fields (`question` and any other field but `id`,
`answer` and `answers`); the gold answers stay in the parent with the metric.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from harness_learning.evals.answers import strip_answer
from harness_learning.evals.custom.datafile import PRIVATE_FIELDS, load_examples
from harness_learning.evals.custom.metrics import Metric, MetricError, parse_metric
from harness_learning.evals.problem import Problem
from harness_learning.harnesses.usertools import last_line

DEV_FRACTION = 0.6
TRACKS = ("reasoning", "qa")


class DataTask:
    """Examples from `path`, scored by `metric` (a spec for `parse_metric`, or a `Metric`)."""

    def __init__(self, path: str | Path, *, metric: str | Metric = "exact",
                 describe: str | None = None, n_dev: int | None = None,
                 n_test: int | None = None, seed: int = 0, track: str = "reasoning",
                 harness_seed: str = "reasoning_direct", name: str | None = None) -> None:
        if track not in TRACKS:
            raise ValueError(f"track must be one of {', '.join(TRACKS)}, got {track!r}")
        self.path = Path(path)
        self.name = name or self.path.stem
        self.track, self.seed, self.split_seed = track, harness_seed, seed
        self.metric = metric if isinstance(metric, Metric) else parse_metric(metric)
        examples = load_examples(self.path)
        self.n_dev, self.n_test = split_sizes(len(examples), n_dev, n_test, self.path)
        order = sorted(examples, key=lambda e: e["id"])
        random.Random(seed).shuffle(order)
        problems = [to_problem(e) for e in order]
        self._dev = problems[: self.n_dev]
        self._test = problems[self.n_dev : self.n_dev + self.n_test]
        self.input_fields = sorted({k for p in problems for k in p.inputs})
        self._describe = describe
        self._reported: set[str] = set()

    def dev(self) -> list[Problem]:
        return list(self._dev)

    def test(self) -> list[Problem]:
        return list(self._test)

    def retriever(self) -> None:
        return None

    def score(self, problem: Problem, answer: object) -> float:
        """The metric's score. A metric that raises or leaves [0, 1] raises `MetricError`
        here (the evaluator scores that problem 0 and records why); it is reported once."""
        if not isinstance(answer, str):
            return 0.0
        try:
            return self.metric.score(strip_answer(answer), problem.gold, problem.meta["example"])
        except Exception as exc:
            raise self._failed(exc) from exc

    async def ascore(self, problem: Problem, answer: object) -> float:
        """As `score`, awaiting the model for an LLM judge."""
        if not isinstance(answer, str):
            return 0.0
        try:
            return await self.metric.ascore(strip_answer(answer), problem.gold,
                                            problem.meta["example"])
        except Exception as exc:
            raise self._failed(exc) from exc

    def check_metric(self, problems: list[Problem] | None = None) -> None:
        """Score each problem's gold answer against itself (the dev pool by default) before any
        harness runs: a metric that raises there, or gives the gold less than its maximum (1),
        would score every answer wrongly and the run would optimise against it. Raises
        `MetricCheckFailed`, one line naming the metric, the problem and what went wrong.

        An LLM judge (`judge:`) is not checked: it would cost a model call per problem, and its
        own reply parsing already fails loudly. A `regex` metric's gold is a pattern, not an
        answer, so it is only checked not to raise (an invalid pattern)."""
        if self.metric.judge is not None:
            return
        exact_max = not self.metric.spec.startswith("regex")
        for problem in self.dev() if problems is None else problems:
            gold = problem.meta.get("answer", problem.gold)
            text = gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)
            try:
                value = float(self.metric.score(strip_answer(text), problem.gold,
                                                problem.meta["example"]))
            except Exception as exc:
                raise MetricCheckFailed(self.metric.spec, problem.id,
                                        f"raised {last_line(exc)}") from exc
            if exact_max and not value >= 1.0 - 1e-9:
                raise MetricCheckFailed(self.metric.spec, problem.id,
                                        f"gave {value:g}, below its maximum 1")

    def _failed(self, exc: Exception) -> MetricError:
        text = str(exc) if isinstance(exc, MetricError) else (
            f"metric {self.metric.spec!r} raised {type(exc).__name__}: {exc}")
        error = MetricError(f"{text} (the problem scores 0)")
        key = f"{type(exc).__name__}:{text[:80]}"
        if key not in self._reported:  # once per kind of failure, not once per problem
            self._reported.add(key)
            print(f"warning: {error}", file=sys.stderr)
        return error

    @property
    def description(self) -> str:
        if self._describe:
            return self._describe
        example = self._dev[0] if self._dev else None
        others = [f for f in self.input_fields if f != "question"]
        lines = [
            f"Your own task `{self.name}`: {self.n_dev + self.n_test} labelled examples.",
            "Input state: `question` (a string)"
            + (f", and the fields {', '.join(f'`{f}`' for f in others)}." if others else " only."),
            "Output state: `answer`, a string (a leading 'Answer:' label and surrounding "
            "whitespace are stripped, nothing else).",
            f"Scoring: {self.metric.description}.",
        ]
        if example is not None:
            lines.append(f"Example question: {example.question}")
            lines.append(f"Its gold answer: {example.meta['answer']}")
        return "\n".join(lines)


class MetricCheckFailed(MetricError):
    """The metric failed on a gold answer scored against itself (`DataTask.check_metric`):
    bad input, said as one line with a hint before anything runs (exit 2 on the command line)."""

    def __init__(self, spec: str, problem_id: str, what: str) -> None:
        super().__init__(f"metric {spec!r} {what} on problem {problem_id!r}, scoring its gold "
                         "answer against itself")
        self.hint = ("a metric must give a gold answer its maximum, 1: fix the metric (or that "
                     "problem's answer in the data file) and rerun")


def split_sizes(available: int, n_dev: int | None, n_test: int | None,
                path: Path) -> tuple[int, int]:
    """(n_dev, n_test): the given sizes, or a 60/40 split of what is there."""
    if n_dev is None and n_test is None:
        n_dev = max(1, round(available * DEV_FRACTION))
        n_test = available - n_dev
    elif n_dev is None:
        n_dev = available - (n_test or 0)
    elif n_test is None:
        n_test = max(0, available - n_dev)
    if n_dev < 1 or n_test < 0:
        raise ValueError(f"{path}: need n_dev >= 1 and n_test >= 0 (got {n_dev}, {n_test}) "
                         f"from {available} examples")
    if n_dev + n_test > available:
        raise ValueError(f"{path}: asked for {n_dev} dev + {n_test} test examples but the file "
                         f"has {available}; pass smaller --dev/--test or add examples")
    return n_dev, n_test


def to_problem(example: dict[str, Any]) -> Problem:
    golds = list(example["answers"]) if "answers" in example else [example["answer"]]
    inputs = {k: v for k, v in example.items() if k not in PRIVATE_FIELDS}
    return Problem(id=example["id"], inputs=inputs, gold=golds,
                   meta={"answer": golds[0], "aliases": golds[1:], "example": example})
