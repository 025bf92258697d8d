"""Metrics for a task of your own: `parse_metric(spec)` for one of

- `exact`: equal after normalisation (lowercase, ASCII punctuation and a/an/the dropped,
  whitespace collapsed: the SQuAD rule the QA tasks use);
- `f1`: token F1 after the same normalisation;
- `contains`: the normalised gold appears, as whole words, in the normalised prediction;
- `numeric[:REL_TOL]`: the last number in the prediction equals the gold number within a
  relative tolerance (default 1e-6; commas as thousands separators are ignored);
- `regex`: the gold is a regular expression the whole (stripped) prediction must match;
- `json`: the prediction holds a JSON object; the score is the fraction of the gold object's
  keys whose values are equal (strings compared normalised);
- `module:function` or `file.py:function`: your callable `(prediction, gold, example) -> float`
  in [0, 1], run in the parent process only;
- `judge:MODEL`: an LLM judge through the model layer with the fixed rubric `JUDGE_RUBRIC`
  (greedy decoding, so its calls are cached; `calls` and `cache_hits` count them). The answer
  reaches it as quoted data, only a one-word grade counts, a decoy reference catches answers
  that instruct the judge, and its calls count as Solver calls (`evals.custom.judge_metric`).

Built-in metrics score against every gold answer (`answer`, or each of `answers`) and keep the
best. A metric may raise or return anything: `check_score` turns that into one clear error.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness_learning.evals.custom.imports import resolve
from harness_learning.evals.custom.judge_metric import (  # noqa: F401 (the metric's names)
    JUDGE_GRADES,
    JUDGE_RUBRIC,
    Judge,
    _trace_entry,
    parse_grade,
)
from harness_learning.evals.qa.metrics import f1_score, normalize_answer
from harness_learning.evals.result import Graded
from harness_learning.harnesses.llm.ledger import METERED

METRIC_NAMES = ("exact", "f1", "contains", "numeric[:REL_TOL]", "regex", "json",
                "module:function", "judge:MODEL")
DEFAULT_REL_TOL = 1e-6
_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
FEEDBACK_CHARS = 1000
"""Longest feedback text kept per problem (the report has a budget)."""


class MetricError(ValueError):
    """A metric spec that names no metric, or a metric that misbehaved on one problem."""


@dataclass
class Metric:
    """A scorer `(prediction, gold, example) -> float in [0, 1]` and the words the Proposer is
    told about it. `per_gold` metrics are applied to each gold answer and the best is kept."""

    spec: str
    description: str
    fn: Callable[[str, Any, dict[str, Any]], float]
    per_gold: bool = True
    judge: Judge | None = None

    def score(self, prediction: str, golds: list[Any], example: dict[str, Any]) -> float:
        """The checked score (raises `MetricError` for a value outside [0, 1])."""
        if self.judge is not None:
            return self.judge.grade_sync_all(example.get("question", ""), prediction, golds)
        if not self.per_gold:
            gold = example.get("answer", golds[0] if len(golds) == 1 else golds)
            return check_score(self.fn(prediction, gold, example), self.spec)
        return max(check_score(self.fn(prediction, g, example), self.spec) for g in golds)

    async def ascore(self, prediction: str, golds: list[Any], example: dict[str, Any]) -> float:
        """`score` without blocking the event loop the problems run on: a judge's calls are
        awaited, a user metric runs in a thread (`metered`), a built-in one at once."""
        if self.judge is not None:
            return await self.judge.agrade_all(example.get("question", ""), prediction, golds)
        if self.per_gold:
            return self.score(prediction, golds, example)
        return await metered(self.score, prediction, golds, example)


_ONE_AT_A_TIME = threading.Lock()


async def metered(score: Callable[..., float], *args: object) -> float:
    """A user metric's `score(*args)` in a thread of its own, one at a time (as it ran before,
    on the loop), so it may call the model layer's blocking `complete`. Each model call it
    makes through the model layer (`ledger.METERED`) comes back on the `Graded` score as a
    `judge` entry of the problem's trace: a Solver call to every budget of the run."""
    calls: list[Any] = []

    def run() -> float:
        METERED.set(calls)  # this thread's own copy of the context
        with _ONE_AT_A_TIME:
            return score(*args)

    value = await asyncio.to_thread(run)
    if not calls:
        return value
    entries = tuple(_trace_entry(c, str(getattr(c, "model", "") or "metric"), "metric",
                                 str(getattr(c, "text", "")), None,
                                 bool(getattr(c, "cached", False)),
                                 float(getattr(c, "latency_s", 0.0) or 0.0)) for c in calls)
    if isinstance(value, Graded):
        return Graded(float(value), value.feedback, (*value.calls, *entries))
    return Graded(float(value), None, entries)


def check_score(value: object, spec: str) -> float:
    """A number in [0, 1] (bools count), else `MetricError` naming what came back. A metric may
    also return feedback text beside its score, as `(score, "text")` or
    `{"score": score, "feedback": "text"}`: the result is then a `Graded` score."""
    if isinstance(value, tuple | dict):
        score, feedback = _with_feedback(value, spec)
        return Graded(check_score(score, spec), feedback)
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise MetricError(f"metric {spec!r} returned {value!r:.80}; a metric must return a "
                          "number in [0, 1]")
    return float(value)


def _with_feedback(value: tuple | dict, spec: str) -> tuple[Any, str]:
    """(score, feedback) of a metric's score-with-feedback, or `MetricError` saying its shape."""
    shape = ("a metric with feedback returns (score, 'text') or "
             "{'score': score, 'feedback': 'text'}")
    if isinstance(value, dict):
        if set(value) != {"score", "feedback"}:
            raise MetricError(f"metric {spec!r} returned a dict with keys {sorted(value)}; {shape}")
        value = (value["score"], value["feedback"])
    if len(value) != 2 or not isinstance(value[1], str):
        raise MetricError(f"metric {spec!r} returned {value!r:.80}; {shape}")
    return value[0], value[1][:FEEDBACK_CHARS]


def parse_metric(spec: str) -> Metric:
    """The metric `spec` names (see the module docstring); `MetricError` for an unknown one."""
    if not isinstance(spec, str) or not spec.strip():
        raise MetricError(f"metric must be a non-empty string; known: {', '.join(METRIC_NAMES)}")
    name, _, arg = spec.partition(":")
    if name in _SIMPLE and not arg:
        fn, words = _SIMPLE[name]
        return Metric(spec, words, fn)
    if name == "numeric":
        tol = _tolerance(spec, arg)
        return Metric(spec, f"the last number in `answer` must equal the gold number within a "
                            f"relative tolerance of {tol:g}", _numeric(tol))
    if name == "judge":
        if not arg:
            raise MetricError("metric 'judge:MODEL' needs a model, e.g. judge:local")
        judge = Judge(arg)
        return Metric(spec, f"an LLM judge ({arg}) grades `answer` against the gold answer: "
                            "same final result 1, partly right 0.5, else 0",
                      judge.grade_sync, judge=judge)
    if ":" in spec and name not in _SIMPLE:
        fn = resolve(spec, "metric")
        if not callable(fn):
            raise MetricError(f"metric {spec!r} is a {type(fn).__name__}, not a callable "
                              "(prediction, gold, example) -> float")
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        return Metric(spec, f"your metric {spec}" + (f": {doc}" if doc else ""), fn,
                      per_gold=False)
    raise MetricError(f"unknown metric {spec!r}; known: {', '.join(METRIC_NAMES)}")


def _tolerance(spec: str, arg: str) -> float:
    if not arg:
        return DEFAULT_REL_TOL
    try:
        tol = float(arg)
    except ValueError:
        tol = -1.0
    if not tol >= 0 or math.isinf(tol):
        raise MetricError(f"metric {spec!r}: REL_TOL must be a number >= 0, e.g. numeric:0.01")
    return tol


def exact(prediction: str, gold: object, example: dict[str, Any]) -> float:
    return float(normalize_answer(prediction) == normalize_answer(str(gold)))


def token_f1(prediction: str, gold: object, example: dict[str, Any]) -> float:
    return f1_score(prediction, str(gold), rule="musique")


def contains(prediction: str, gold: object, example: dict[str, Any]) -> float:
    needle = normalize_answer(str(gold))
    return float(bool(needle) and f" {needle} " in f" {normalize_answer(prediction)} ")


def last_number(text: str) -> float | None:
    found = _NUMBER.findall(text)
    for raw in reversed(found):
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            continue
    return None


def _numeric(tol: float) -> Callable[[str, Any, dict[str, Any]], float]:
    def numeric(prediction: str, gold: object, example: dict[str, Any]) -> float:
        want = gold if isinstance(gold, int | float) else last_number(str(gold))
        got = last_number(prediction)
        if want is None:
            raise MetricError(f"metric 'numeric': the gold answer {gold!r:.60} is not a number")
        return float(got is not None and math.isclose(got, float(want), rel_tol=tol,
                                                      abs_tol=tol if want == 0 else 0.0))
    return numeric


def regex(prediction: str, gold: object, example: dict[str, Any]) -> float:
    try:
        return float(re.fullmatch(str(gold), prediction.strip(), re.DOTALL) is not None)
    except re.error as exc:
        raise MetricError(f"metric 'regex': the gold pattern {gold!r:.60} is invalid: {exc}") from exc


def json_keys(prediction: str, gold: object, example: dict[str, Any]) -> float:
    if isinstance(gold, str):
        try:
            gold = json.loads(gold)
        except ValueError as exc:
            raise MetricError(f"metric 'json': the gold answer is not JSON: {exc}") from exc
    got = _first_json_object(prediction)
    if not isinstance(gold, dict):
        return float(_same(got, gold))
    if not isinstance(got, dict) or not gold:
        return float(got == gold)
    return sum(_same(got.get(k, _MISSING), v) for k, v in gold.items()) / len(gold)


_MISSING = object()


def _same(a: object, b: object) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return normalize_answer(a) == normalize_answer(b)
    return a == b


def _first_json_object(text: str) -> Any:
    """The JSON value the prediction is, or the first {...} object inside it (None if none)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            return decoder.raw_decode(text, start)[0]
        except ValueError:
            continue
    return None


_SIMPLE: dict[str, tuple[Callable[[str, Any, dict[str, Any]], float], str]] = {
    "exact": (exact, "exact match after normalisation (lowercase, ASCII punctuation and the "
                     "articles a/an/the removed, whitespace collapsed); extra words are wrong"),
    "f1": (token_f1, "token F1 between `answer` and the gold answer after normalisation"),
    "contains": (contains, "1 when the normalised gold answer appears as whole words in the "
                           "normalised `answer`"),
    "regex": (regex, "the whole stripped `answer` must match the gold regular expression"),
    "json": (json_keys, "`answer` must hold a JSON object; score = fraction of the gold "
                        "object's keys with equal values"),
}
