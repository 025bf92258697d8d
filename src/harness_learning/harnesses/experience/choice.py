"""The learned choice: which operators and library changes a round tries, by their measured
effect on similar tasks.

Similarity is BM25 over each outcome's context (its task's description and the failure
signature of the report that led to it) against the round's own, with the project's tokenizer
and BM25's term-frequency scoring (`retrieval.bm25.METHOD`, ATIRE). The idf is Lucene's
(log(1 + (N - df + 0.5) / (df + 0.5))), not the index's Robertson one: a library holds a few
dozen outcomes, and Robertson gives every term found in half of them or more an idf of 0, so a
library of one outcome would match nothing. Each outcome's weight is its score over the best
one's (in [0, 1]).

The estimate is Beta-Bernoulli Thompson sampling: each outcome adds its weight to an arm's
alpha when it succeeded (valid, gain above 0: held-out where measured, else selection) and to
beta otherwise; a round draws one sample per arm from a generator seeded by (seed, round) and
tries the arms by draw, highest first. A registered block (an operator) starts from Beta(1, 1),
so an untried block still gets tried. A logged change that is not a block (a Proposer's edit)
starts from the library's own success rate for such changes, worth `PRIOR_OUTCOMES` outcomes
(`change_prior`, empirical Bayes): most logged edits lost where they were made, and under a
uniform prior each would draw as high as an untried block, so a grown library's dozens of them
outdrew its one proven block (`bench experience`'s continual arm; docs/ARCHITECTURE.md has the
figures). When no arm has any evidence (an empty library, or nothing similar in it) the given
order is kept as it is: an empty library reproduces `auto`'s order exactly. Otherwise the draws
order the arms, but whether an arm is paid for at all is decided by its posterior mean: it is
tried only when the mean is at least `TRY_BAR` (an untried block's Beta(1, 1) has mean 1/2, so it
always stays in the plan). So a round may try fewer arms than `operators_per_round`, or none: a
block the evidence says loses here is not paid for again.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from harness_learning.harnesses.experience.entry import OPERATOR, Entry, Outcome
from harness_learning.retrieval.bm25 import METHOD
from harness_learning.retrieval.tokenizer import Tokenizer

K1, B = 1.5, 0.75
PRIOR_OUTCOMES = 2.0
"""How many outcomes a logged change's prior is worth (`change_prior`)."""
TRY_BAR = 0.5
"""A round tries an arm only when its posterior mean says it helps at least as likely as not
(`ranked`'s `bar`): each try costs Solver calls on every selection problem, and after a
round's winning block the library's evidence is mostly of losses stacked on it. The mean, not
the arm's draw, because a single draw clears the bar by chance, and among many arms one
always does: in `bench experience`'s library arm (docs/ARCHITECTURE.md) every try after the
winning block was an arm whose every outcome had lost (posterior means 0.04-0.34), each drawn
above 1/2, none gaining."""


@cache
def _tokenizer() -> Tokenizer:
    return Tokenizer()


def similarity(query: str, docs: Sequence[str]) -> list[float]:
    """BM25 score of each of `docs` for `query`, over the best score (0 for all when nothing
    matches)."""
    import numpy as np
    from bm25s.scoring import _select_tfc_scorer

    tok = _tokenizer()
    terms = [tok.terms(d) for d in docs]
    if not terms:
        return []
    n, avg = len(terms), max(sum(map(len, terms)) / len(terms), 1e-9)
    df: dict[str, int] = {}
    for doc in terms:
        for t in set(doc):
            df[t] = df.get(t, 0) + 1
    tfc = _select_tfc_scorer(METHOD)
    scores = []
    wanted = set(tok.terms(query))
    for doc in terms:
        total = 0.0
        for t in wanted & set(doc):
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            tf = np.float32(doc.count(t))
            total += idf * float(tfc(tf_array=tf, l_d=np.float32(len(doc)), l_avg=np.float32(avg),
                                     k1=np.float32(K1), b=np.float32(B)))
        scores.append(total)
    best = max(scores)
    return [s / best if best > 0 else 0.0 for s in scores]


@dataclass(frozen=True)
class Posterior:
    alpha: float = 1.0
    beta: float = 1.0
    prior_alpha: float = 1.0
    prior_beta: float = 1.0

    @property
    def evidence(self) -> float:
        """The weight of the outcomes on top of the prior."""
        return self.alpha + self.beta - self.prior_alpha - self.prior_beta

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)


def weighted(entries: Sequence[Entry], context: str) -> dict[str, list[tuple[float, Outcome]]]:
    """Entry id -> (similarity weight, outcome) for every outcome of `entries`."""
    flat = [(e.id, o) for e in entries for o in e.outcomes]
    weights = similarity(context, [o.context() for _, o in flat])
    out: dict[str, list[tuple[float, Outcome]]] = {e.id: [] for e in entries}
    for (entry_id, outcome), w in zip(flat, weights, strict=True):
        out[entry_id].append((w, outcome))
    return out


def posterior(evidence: Sequence[tuple[float, Outcome]], prior: Posterior = Posterior()
              ) -> Posterior:
    """`prior` updated by weighted outcomes."""
    alpha = prior.alpha + sum(w for w, o in evidence if o.success)
    beta = prior.beta + sum(w for w, o in evidence if not o.success)
    return Posterior(alpha, beta, prior.alpha, prior.beta)


def change_prior(entries: Sequence[Entry]) -> Posterior:
    """The prior of a logged change that is not a registered block: the success rate of all
    such changes' outcomes in the library (smoothed: half a success over one outcome more),
    worth `PRIOR_OUTCOMES` outcomes; Beta(1, 1) while the library holds none."""
    outcomes = [o for e in entries if e.kind != OPERATOR for o in e.outcomes]
    if not outcomes:
        return Posterior()
    rate = (sum(o.success for o in outcomes) + 0.5) / (len(outcomes) + 1)
    alpha, beta = PRIOR_OUTCOMES * rate, PRIOR_OUTCOMES * (1 - rate)
    return Posterior(alpha, beta, alpha, beta)


def posteriors(entries: Sequence[Entry], evidence: Mapping[str, Sequence[tuple[float, Outcome]]]
               ) -> dict[str, Posterior]:
    """Entry id -> its posterior given `evidence` (`weighted`): a registered block's from
    Beta(1, 1), a logged change's from `change_prior`."""
    edits = change_prior(entries)
    return {e.id: posterior(evidence[e.id], Posterior() if e.kind == OPERATOR else edits)
            for e in entries}


def thompson_draws(arms: Sequence[str], posteriors: Mapping[str, Posterior], seed: int,
                   round_: int) -> dict[str, float] | None:
    """One Beta draw per arm, or None when no arm has evidence. Draws are in `arms`' order
    from a generator seeded by (seed, round), so a resumed round draws the same."""
    prior = Posterior()
    if not any(posteriors.get(a, prior).evidence > 0 for a in arms):
        return None
    rng = random.Random(f"experience:{seed}:{round_}")
    draws = {}
    for arm in arms:
        p = posteriors.get(arm, prior)
        draws[arm] = rng.betavariate(p.alpha, p.beta)
    return draws


def ranked(arms: Sequence[str], draws: Mapping[str, float] | None,
           posteriors: Mapping[str, Posterior], bar: float = 0.0) -> list[str]:
    """`arms` by their draws, highest first (ties keep the given order), leaving out those whose
    posterior mean is below `bar` (an arm without one has Beta(1, 1)'s mean, 1/2); all of them
    in the given order when there are no draws."""
    if draws is None:
        return list(arms)
    kept = [a for a in arms if posteriors.get(a, Posterior()).mean >= bar]
    return sorted(kept, key=lambda a: -draws[a])


def successes(entries: Sequence[Entry], context: str, k: int) -> list[tuple[Entry, float]]:
    """The `k` most relevant past successes with code to show: entries with an outcome that
    gained, by the similarity of their best-matching such outcome, then its gain; each with
    that gain."""
    wins = [(e, o) for e in entries if e.blocks for o in e.outcomes if o.success]
    sims = similarity(context, [o.context() for _, o in wins])
    best: dict[str, tuple[float, float, Entry]] = {}
    for (entry, outcome), sim in zip(wins, sims, strict=True):
        mine = (sim, outcome.gain or 0.0, entry)
        if entry.id not in best or mine[:2] > best[entry.id][:2]:
            best[entry.id] = mine
    ranked = sorted(best.values(), key=lambda r: (-r[0], -r[1], r[2].id))
    return [(entry, gain) for _, gain, entry in ranked[:k]]
