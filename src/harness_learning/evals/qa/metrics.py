"""Answer metrics, exactly as the official HotpotQA, 2WikiMultihopQA and MuSiQue scripts.

All three normalise the same way (SQuAD's rule): lowercase, drop ASCII punctuation
(`string.punctuation`, so "1,000" becomes "1000" and unicode dashes or quotes stay), replace
the whole words a/an/the by a space, collapse whitespace. They differ in token F1:

- HotpotQA and 2Wiki: F1 is 0 when either normalised side is yes/no/noanswer and the two
  differ (a "yes" never earns partial credit); two empty strings give F1 0 (and EM 1).
- MuSiQue (SQuAD 2.0's rule): when either side has no tokens, F1 is 1 if both are empty and
  0 otherwise; no yes/no rule.

Several gold strings (MuSiQue's answer + answer_aliases; 2Wiki's answer + aliases and
demonyms of its answer entity) count as the max of each metric over the set.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable
from typing import Literal

F1Rule = Literal["hotpotqa", "musique"]
"""`hotpotqa` also covers 2Wiki, whose script adapted HotpotQA's."""

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_SPECIAL = ("yes", "no", "noanswer")


def normalize_answer(text: str) -> str:
    """Lowercase, strip ASCII punctuation, articles -> space, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _overlap_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, gold: str, rule: F1Rule = "hotpotqa") -> float:
    """Token F1 of one prediction against one gold string under a dataset's rule."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if rule == "musique":
        pred_tokens = pred.split() if prediction else []
        gold_tokens = ref.split() if gold else []
        if not pred_tokens or not gold_tokens:
            return float(pred_tokens == gold_tokens)
        return _overlap_f1(pred_tokens, gold_tokens)
    if rule != "hotpotqa":
        raise ValueError(f"unknown F1 rule {rule!r}; known: hotpotqa, musique")
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    return _overlap_f1(pred.split(), ref.split())


def best_metrics(prediction: str, golds: Iterable[str], rule: F1Rule = "hotpotqa") -> dict:
    """`{"em": .., "f1": ..}`, each the max over the gold strings (0 for an empty set)."""
    golds = list(golds)
    em = max((exact_match(prediction, g) for g in golds), default=0.0)
    f1 = max((f1_score(prediction, g, rule) for g in golds), default=0.0)
    return {"em": em, "f1": f1}
