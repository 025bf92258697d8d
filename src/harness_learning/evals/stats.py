"""Intervals the project reports, from scipy.stats rather than tables copied by hand: each copy
stopped at another size and then fell back to a normal or a rounded quantile."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def ci95(values: Sequence[float]) -> float | None:
    """Half-width of the 95% Student-t interval of the mean of `values` (None for fewer than
    two: one value has no spread to estimate)."""
    if len(values) < 2:
        return None
    from scipy.stats import t  # lazy: scipy.stats takes seconds to import

    quantile = float(t.ppf(0.975, len(values) - 1))
    return quantile * statistics.stdev(values) / math.sqrt(len(values))


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """Exact (Clopper-Pearson) 95% interval of a rate of `k` successes in `n` trials."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)
