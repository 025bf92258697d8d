"""Multi-hop QA tasks (`hotpotqa`, `musique`, `2wiki`): a dataset file, a fixed dev/test split,
the official answer metrics and a retriever for `tools.search`.

Split protocol (paper): a dev pool of 500 questions (feedback and selection are drawn from it
each round, see `evals.splits`) and about 300 held-out test questions, disjoint, fixed by
`seed`. Records are ordered by id before shuffling, so the split does not depend on the file's
order. When fewer than 800 answerable records exist and no sizes are given, the file is split
60/40 (dev/test): the shipped samples of 100 and 136 questions give 60/40 and 82/54.
MuSiQue records marked unanswerable (only in `musique_full`) are left out of both splits.

A problem's `inputs` hold the question alone; the gold answers (answer + aliases) are its
`gold`, and `meta` carries the gold supporting titles a feedback report may show. The score is
exact match against any gold string (the paper's metric); `metrics()` also gives token F1.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from harness_learning.evals.answers import strip_answer
from harness_learning.evals.problem import Problem
from harness_learning.evals.qa.datasets import DATASETS, QARecord, load_records
from harness_learning.evals.qa.metrics import F1Rule, best_metrics
from harness_learning.retrieval.protocol import Retriever

PAPER_DEV, PAPER_TEST = 500, 300
SCORES = ("em", "f1")
"""What `score` returns: exact match (the paper's) or token F1 (`score_by`)."""
SMALL_DEV_FRACTION = 0.6

_NAMES = {"hotpotqa": "HotpotQA", "musique": "MuSiQue", "2wiki": "2WikiMultihopQA"}
_F1_RULE: dict[str, F1Rule] = {"hotpotqa": "hotpotqa", "2wiki": "hotpotqa", "musique": "musique"}


def default_sizes(available: int) -> tuple[int, int]:
    """(n_dev, n_test): the paper's 500/300 when the file allows, else a 60/40 split."""
    if available >= PAPER_DEV + PAPER_TEST:
        return PAPER_DEV, PAPER_TEST
    n_dev = round(available * SMALL_DEV_FRACTION)
    return n_dev, available - n_dev


class QATask:
    """One multi-hop QA dataset as a `Task` (track "qa", seed harness "multihop_two_hop")."""

    track = "qa"
    seed = "multihop_two_hop"

    def __init__(
        self,
        dataset: str,
        path: Path | str,
        *,
        retriever: Retriever | None = None,
        index_dir: Path | str | None = None,
        index_backend: str = "auto",
        n_dev: int | None = None,
        n_test: int | None = None,
        seed: int = 0,
        score_by: str = "em",
        **load_options,
    ):
        if dataset not in DATASETS:
            raise ValueError(f"unknown QA dataset {dataset!r}; known: {', '.join(DATASETS)}")
        if score_by not in SCORES:
            raise ValueError(f"score_by {score_by!r}: choose {' or '.join(SCORES)}")
        self.score_by = score_by
        self.name = dataset
        self.path = Path(path)
        self.split_seed = seed
        self._retriever = retriever
        self._index_dir = Path(index_dir) if index_dir is not None else None
        self._index_backend = index_backend
        records = [r for r in load_records(dataset, path, **load_options) if r.answerable]
        dev_default, test_default = default_sizes(len(records))
        self.n_dev = dev_default if n_dev is None else n_dev
        self.n_test = test_default if n_test is None else n_test
        if self.n_dev < 1 or self.n_test < 0:
            raise ValueError(f"n_dev must be >= 1 and n_test >= 0 (got {self.n_dev}, {self.n_test})")
        if self.n_dev + self.n_test > len(records):
            raise ValueError(
                f"{self.path}: asked for {self.n_dev} dev + {self.n_test} test questions but the "
                f"file has {len(records)} answerable records"
            )
        order = sorted(records, key=lambda r: r.id)
        random.Random(seed).shuffle(order)
        self._dev = [_problem(r) for r in order[: self.n_dev]]
        self._test = [_problem(r) for r in order[self.n_dev : self.n_dev + self.n_test]]
        self._rule = _F1_RULE[dataset]

    def dev(self) -> list[Problem]:
        return list(self._dev)

    def test(self) -> list[Problem]:
        return list(self._test)

    def metrics(self, problem: Problem, answer: object) -> dict[str, float]:
        """`{"em", "f1"}`, each the max over the gold answer and its aliases."""
        if not isinstance(answer, str):
            return {"em": 0.0, "f1": 0.0}
        return best_metrics(strip_answer(answer), problem.gold, self._rule)

    def score(self, problem: Problem, answer: object) -> float:
        """Exact match with aliases (the paper's metric), or token F1 with `score_by="f1"`
        (a finer signal to select on where exact match is near 0 at small scale); 0.0 for
        anything but a string."""
        try:
            return self.metrics(problem, answer)[self.score_by]
        except Exception:
            return 0.0

    def retriever(self) -> Retriever | None:
        """The retriever given, else the index at `index_dir` (opened once, with
        `index_backend`: auto, bm25, chroma, hybrid, rank-bm25), else None."""
        if self._retriever is None and self._index_dir is not None:
            from harness_learning import retrieval

            open_index: Callable[..., Retriever] = retrieval.open_index
            self._retriever = open_index(self._index_dir, backend=self._index_backend)
        return self._retriever

    @property
    def description(self) -> str:
        example = self._dev[0].question if self._dev else ""
        has_search = self._retriever is not None or self._index_dir is not None
        search = (
            "`tools.search(query, k)` returns the k best passages (title, text, score) from the "
            "task's corpus of Wikipedia paragraphs; one search rarely finds every fact."
            if has_search
            else "This task has no retriever: `tools.search` is unavailable."
        )
        return (
            f"Multi-hop question answering on {_NAMES[self.name]}: each question needs facts from "
            "two or more Wikipedia paragraphs (a bridge entity, a comparison, or a chain).\n"
            "Input state: `question` (a string) only.\n"
            f"{search}\n"
            "Output state: `answer`, a short phrase only (an entity name, a date, a number, or "
            "yes/no), not a sentence (a leading 'Answer:' label and surrounding whitespace are "
            "stripped, nothing else).\n"
            f"{self._scoring()}\n"
            f"Example question: {example}"
        )


    def _scoring(self) -> str:
        normalised = ("after normalisation (lowercase, ASCII punctuation and the articles "
                      "a/an/the removed, whitespace collapsed) against the gold answer or any of "
                      "its aliases")
        if self.score_by == "f1":
            return (f"Scoring: token F1 {normalised} (the overlap of answer and gold words); "
                    "exact match is reported too. Extra words lower the score.")
        return (f"Scoring: exact match {normalised}; token F1 is reported too. Extra words make "
                "an answer wrong.")


def _problem(record: QARecord) -> Problem:
    return Problem(
        id=record.id,
        inputs={"question": record.question},
        gold=record.answers,
        meta={
            "dataset": record.dataset,
            "type": record.type,
            "answer": record.answers[0],
            "aliases": list(record.answers[1:]),
            "supporting_titles": list(record.supporting_titles),
        },
    )
