"""The intervals and the memorisation guard's p-value come from scipy.stats; these pin them to
the numbers the hand-written tables and the exact hypergeometric sum gave before."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import pytest
from scipy import stats

from harness_learning.evals.guards import fisher_greater
from harness_learning.evals.stats import ci95

OLD_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
            9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
            16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086}
"""The 97.5% t quantiles the experiment and bench reports used to carry, by degrees of freedom."""


def old_fisher(shown_right: int, shown_n: int, unseen_right: int, unseen_n: int) -> Fraction:
    """The exact tail the guard used to sum: P(X >= shown_right), X hypergeometric."""
    total, right = shown_n + unseen_n, shown_right + unseen_right
    return Fraction(sum(math.comb(right, k) * math.comb(total - right, shown_n - k)
                        for k in range(shown_right, min(right, shown_n) + 1)),
                    math.comb(total, shown_n))


@pytest.mark.parametrize("df", sorted(OLD_T975))
def test_ci95_gives_the_old_tables_numbers(df: int) -> None:
    values = [((i * 7) % 5) / 4 for i in range(df + 1)]
    spread = statistics.stdev(values) / math.sqrt(len(values))
    assert ci95(values) == pytest.approx(OLD_T975[df] * spread, rel=2.5e-4)  # 3 decimals
    assert ci95(values) == pytest.approx(stats.t.ppf(0.975, df) * spread, rel=1e-12)


def test_ci95_of_a_known_sample_and_of_too_few() -> None:
    assert ci95([0.2, 0.4, 0.9]) == pytest.approx(4.303 * statistics.stdev([0.2, 0.4, 0.9])
                                                  / math.sqrt(3), rel=1e-4)
    assert ci95([0.5]) is None and ci95([]) is None
    # past the old tables' end (df 10 in one, 20 in the other) they used 1.96; t is wider
    assert ci95([0.0, 1.0] * 6) == pytest.approx(2.201 * statistics.stdev([0.0, 1.0] * 6)
                                                 / math.sqrt(12), rel=2e-4)


@pytest.mark.parametrize(("case", "old"), [
    ((6, 6, 0, 8), 1 / math.comb(14, 6)),
    ((0, 5, 5, 5), 1.0),
    ((3, 4, 1, 4), (math.comb(4, 3) * math.comb(4, 1) + 1) / math.comb(8, 4)),
    ((5, 8, 1, 8), 0.05944),
])
def test_fisher_greater_gives_the_old_p_values(case: tuple[int, int, int, int],
                                               old: float) -> None:
    assert fisher_greater(*case) == pytest.approx(old, rel=1e-4)


def test_fisher_greater_equals_the_exact_tail_everywhere_small() -> None:
    for shown_n in range(1, 9):
        for unseen_n in range(1, 9):
            for shown_right in range(shown_n + 1):
                for unseen_right in range(unseen_n + 1):
                    case = (shown_right, shown_n, unseen_right, unseen_n)
                    assert fisher_greater(*case) == pytest.approx(float(old_fisher(*case)),
                                                                  rel=1e-12), case
