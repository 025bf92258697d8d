"""The user's own metric: a total price is right within a cent, half right within 10%."""

from __future__ import annotations

import re


def score(prediction: str, gold: object, example: dict) -> float:
    """1 when the last number of the answer is the gold total within 0.01 euro, 0.5 within
    10%, else 0."""
    numbers = re.findall(r"-?\d+(?:\.\d+)?", prediction.replace(",", "."))
    if not numbers:
        return 0.0
    got, want = float(numbers[-1]), float(gold)
    if abs(got - want) <= 0.01:
        return 1.0
    return 0.5 if abs(got - want) <= 0.1 * abs(want) else 0.0
