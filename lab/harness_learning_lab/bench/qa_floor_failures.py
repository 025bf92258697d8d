"""Where a multi-hop QA answer was lost, read from its trace (`bench qa-floor`).

A two-hop harness loses an answer at one of a few stages, and each calls for a different change:
retrieval never brought the answer up (a better query or another hop), the passages held it but
the summaries dropped it (answer from the passages themselves), or the summaries held it and
the final answer still missed (a short-answer step). `failure_stage` names the first stage at
which the gold answer is gone, from the recorded calls alone:

- the passages are every `search` call's results;
- the summaries are the results of every Solver call but the last (the seed's two hops);
- the output is the harness's answer, the last Solver call's parse.

Yes/no golds never appear as text in a passage, so they are judged on retrieval (were all gold
titles found) and the output only. Matching is on the official normalisation
(`evals.qa.metrics.normalize_answer`) as whole words.
"""

from __future__ import annotations

import re
from typing import Any

from harness_learning.evals.qa.metrics import normalize_answer

STAGES = ("correct", "error", "not_retrieved", "lost_in_summary", "span_too_long", "yes_no",
          "date", "other")
"""In order: EM 1; no answer (the harness failed); the gold answer (or, for a yes/no gold, a
gold title) not in any retrieved passage; in a passage but in no summary; in the summaries but
the output wrong: it holds the gold with extra words, it is yes/no where the gold is not (or
the gold is yes/no and the output is the other or no yes/no at all), the gold is a date or
year and the output another form of it or another date, anything else."""

_YES_NO = frozenset({"yes", "no"})
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


def _calls(row: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    return [c for c in row["result"].get("calls") or [] if c.get("tool") == tool]


def passages(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Every passage any search returned, in call order."""
    found = []
    for call in _calls(row, "search"):
        if isinstance(call.get("result"), list):
            found += [p for p in call["result"] if isinstance(p, dict)]
    return found


def repeats_a_query(row: dict[str, Any]) -> bool:
    """A later search asked what an earlier one already asked (the seed's fallback when the
    Solver wrote no 'Query:' line is the question itself): that hop could bring nothing new."""
    queries = [normalize_answer(str((c.get("args") or {}).get("query", "")))
               for c in _calls(row, "search")]
    return len(set(queries)) < len(queries)


def summaries(row: dict[str, Any]) -> list[str]:
    """The Solver's replies before its last one (the notes the answer was written from)."""
    replies = [c.get("result") for c in _calls(row, "llm")]
    return [r for r in replies[:-1] if isinstance(r, str)]


def contains(text: str, gold: str) -> bool:
    """The normalised gold as whole words inside the normalised text."""
    needle = normalize_answer(gold)
    return bool(needle) and f" {needle} " in f" {normalize_answer(text)} "


def _any_gold(texts: list[str], golds: list[str]) -> bool:
    return any(contains(t, g) for t in texts for g in golds)


def gold_recall(row: dict[str, Any]) -> float:
    """Share of the gold supporting titles among the titles every search returned (recall@k
    over all hops); 1.0 when a record names no gold titles."""
    gold = {normalize_answer(t) for t in row.get("supporting_titles") or []}
    if not gold:
        return 1.0
    seen = {normalize_answer(str(p.get("title", ""))) for p in passages(row)}
    return len(gold & seen) / len(gold)


def is_date(text: str) -> bool:
    """A year or a date with a month name."""
    norm = normalize_answer(text)
    return bool(_YEAR.search(norm)) and (len(norm.split()) <= 4 or any(m in norm for m in _MONTHS))


def output_stage(answer: str, golds: list[str]) -> str:
    """Why an answer that the summaries made possible is still not an exact match."""
    if any(contains(answer, g) for g in golds):
        return "span_too_long"
    norm = normalize_answer(answer)
    gold_yes_no = any(normalize_answer(g) in _YES_NO for g in golds)
    if gold_yes_no or norm in _YES_NO:
        return "yes_no"
    if any(is_date(g) for g in golds):
        return "date"
    return "other"


def failure_stage(row: dict[str, Any]) -> str:
    """The first stage (of `STAGES`) at which this problem's gold answer was lost."""
    if row.get("em"):
        return "correct"
    answer = row["result"].get("answer")
    if not isinstance(answer, str) or row["result"].get("error_kind") not in (None, "metric_error"):
        return "error"
    golds = [g for g in row.get("gold") or [] if isinstance(g, str)]
    if any(contains(answer, g) for g in golds):
        return "span_too_long"
    if any(normalize_answer(g) in _YES_NO for g in golds):
        return "not_retrieved" if gold_recall(row) < 1.0 else "yes_no"
    texts = [f"{p.get('title', '')} {p.get('text', '')}" for p in passages(row)]
    if not _any_gold(texts, golds):
        return "not_retrieved"
    if not _any_gold(summaries(row), golds):
        return "lost_in_summary"
    return output_stage(answer, golds)
