"""Reasoning Gym tasks: any of reasoning-gym's procedural datasets as task `rg:<name>`.

Split (paper): per task type 25 dev problems (feedback and selection both come from them) and
75 held-out test problems, sizes configurable. reasoning-gym seeds item `i` of a dataset built
with seed `s` from `s + i`. With a `split_secret` (an adaptation run draws one and keeps it in
its config, which no worker sees) the dev and test start seeds are derived from it: harness
code that imports a generator could otherwise regenerate every problem, gold included, from
public consecutive seeds. Without one (benchmarks, tests) dev uses seeds `seed ..
seed+n_dev-1` and test starts at `seed + n_dev`; either way the seed ranges are disjoint. A
test question that repeats a dev question, or an earlier test question, word for word (small
task spaces do this) is skipped and the next seed taken: no test question was seen in dev and
none counts twice.
Items are generated on first use and cached in memory (some tasks take ~0.3 s per item).

A problem's `inputs` hold `question` only; `gold` is the whole entry (answer + metadata), which
the package's own `dataset.score_answer(answer, entry)` needs.

Scorer guard. Probing all 105 scorers (scripts/probe_rg_scorers.py) with adversarial answers
showed (reasoning-gym 0.1.25):
- raising: `prime_factorization` (ValueError on nearly any non-numeric answer, "None"
  included) and `boxnet` (AttributeError on a JSON list); any scorer may raise on odd input.
- lenient: the package's default scorer (used by ~40 tasks, e.g. basic_arithmetic, leg_counting,
  caesar_cipher) gives `len(gold)/len(answer)` when the gold is a substring of the answer, so
  "12 12" earns 0.47 and a list of candidates earns 1/k of credit. Custom scorers give full
  credit to gold plus junk ("<gold> because ...": fraction_simplification, letter_jumble,
  polynomial_equations, spell_backward, time_intervals, word_sorting 0.9), to gold inside junk
  (gsm_symbolic takes the first number; kakurasu and survo parse a grid out of any text;
  knights_knaves, sokoban), and `game_of_life_halting` gives 1.0 to every non-empty answer
  (`bool("False")` is true). Several give 0.01 to any parsable wrong answer (countdown,
  puzzle24, power_function...) and rubiks_cube 0.01 even to "".
The guard, in order: a non-string or empty answer scores 0 without calling the scorer; an
answer longer than `2 * len(gold) + 16` characters scores 0 (no real answer needs that, and
this also keeps huge inputs away from slow parsers); an answer that contains the gold as a
whole token (case-insensitive) plus other letters or digits scores 0 (gold plus junk, or a list
of candidates: only punctuation or brackets may surround it); scorers that verify nothing
(`STRICT_MATCH`) need the normalised answer to equal the gold; any exception scores 0; the
result is clamped to 0..1. By default the score is then binary (1.0 only for full credit: the
accuracy the paper reports), so partial credit (0.01 for any parsable answer, similarity
credit) cannot add up; `partial_credit=True` keeps the package's partial values (still
guarded). Five verifier tasks have no single gold (`answer` is None: boxnet, graph_color,
propositional_logic, rubiks_cube, rush_hour): any answer the checker accepts counts, capped
at `4 * len(question) + 1000` characters; a feedback report shows their example solution.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import secrets
import threading
from functools import cache
from typing import TYPE_CHECKING, Any

from harness_learning.evals.answers import strip_answer
from harness_learning.evals.problem import Problem

if TYPE_CHECKING:
    from reasoning_gym.dataset import ProceduralDataset

PAPER_DEV, PAPER_TEST = 25, 75
STRICT_MATCH = frozenset({"game_of_life_halting"})
"""Tasks whose scorer accepts wrong answers outright: exact (normalised) match instead."""
_LENGTH_SLACK = 16
_NO_ORACLE_SLACK = 1000
_GLOBAL_RNG_LOCK = threading.Lock()
_EXAMPLE_KEYS = ("possible_answer", "example_answer", "example_correct_answer")
_EXAMPLE_LIMIT = 1200
SEED_SPACE = 1 << 48
CONTROL_OFFSET = 1 << 24
"""Without a secret, control problems start this far past the dev seeds (test uses the
seeds right after dev, and needs far fewer)."""


def new_split_secret() -> str:
    """A fresh secret for one run's splits (kept by the parent, stored in the run)."""
    return secrets.token_hex(16)


def secret_seeds(secret: str, task: str, n_dev: int) -> tuple[int, int]:
    """(dev start seed, test start seed) derived from `secret`; their ranges never overlap
    (the test range gets room for the regeneration `ReasoningTask._build_test` may need)."""
    def draw(part: str) -> int:
        digest = hashlib.sha256(f"{secret}:{task}:{part}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % SEED_SPACE

    dev, test = draw("dev"), draw("test")
    if abs(test - dev) < n_dev + (1 << 20):  # ~never; keep the ranges apart all the same
        test = (dev + n_dev + (1 << 20)) % SEED_SPACE
    return dev, test


def gold_answer_text(entry: dict) -> str:
    """The gold answer as a feedback report shows it. Verifier tasks (boxnet, graph_color,
    propositional_logic, rubiks_cube, rush_hour) have no single answer (`None`): their example
    solution, when the entry carries one, is shown as one accepted answer among many."""
    if entry.get("answer") is not None:
        return str(entry["answer"])
    meta = entry.get("metadata") or {}
    example = next((meta[k] for k in _EXAMPLE_KEYS if meta.get(k)), None)
    if example is None:
        return "(no single gold answer: any answer the task's checker accepts)"
    if not isinstance(example, str):
        example = json.dumps(example, default=str)
    return f"{example} (one accepted answer; the checker accepts any valid one)"


@cache
def known_tasks() -> tuple[str, ...]:
    """Every reasoning-gym dataset usable on its own (`composite` needs a config of others)."""
    import reasoning_gym.factory as factory

    return tuple(sorted(n for n in factory.DATASETS if n != "composite"))


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def guarded_score(dataset: ProceduralDataset, answer: object, entry: dict, *, partial_credit: bool = False,
                  strict: bool = False) -> float:
    """The package's `dataset.score_answer(answer, entry)` behind the guard described above."""
    if not isinstance(answer, str):
        return 0.0
    text = strip_answer(answer)
    oracle = entry.get("answer")
    if oracle is None:  # a verifier task: any valid answer counts, so no gold to compare with
        if not text or len(text) > 4 * len(str(entry.get("question", ""))) + _NO_ORACLE_SLACK:
            return 0.0
    else:
        gold = str(oracle)
        if not text or len(text) > 2 * len(gold) + _LENGTH_SLACK:
            return 0.0
        if strict:
            return float(_norm(text) == _norm(gold))
        if _gold_plus_junk(text, gold):
            return 0.0
    try:
        value = float(dataset.score_answer(text, entry))
    except Exception:
        return 0.0
    if value != value:  # NaN
        return 0.0
    value = min(1.0, max(0.0, value))
    if partial_credit:
        return value
    return 1.0 if value >= 1.0 - 1e-9 else 0.0


def _gold_plus_junk(text: str, gold: str) -> bool:
    """The answer holds the gold as a whole token and more letters or digits besides.

    "Whole" means not glued to a letter, digit or dot, so "1.0" for gold "1" or "-12" for "12"
    go to the scorer, while "12 12", "x 3/4" or "Tulsa, Boston" do not.
    """
    low, g = text.casefold(), gold.strip().casefold()
    if not g or low == g:
        return False
    for match in re.finditer(rf"(?<![\w.]){re.escape(g)}(?![\w.])", low):
        rest = low[: match.start()] + " " + low[match.end() :]
        if any(ch.isalnum() for ch in rest):
            return True
    return False


def generate_entries(name: str, seed: int, size: int, config: dict | None = None) -> list[dict]:
    """`size` entries of `name` from `seed`, reproducibly.

    A few generators (list_functions in 0.1.25) draw from the global `random` module, so the
    same index gives a different question each call. Each item is therefore generated with the
    global `random` (and numpy's) seeded from (name, seed, index), and their states restored
    (under a lock, so concurrent generation stays reproducible).
    """
    import numpy as np
    import reasoning_gym

    def reseed(key: str) -> None:
        random.seed(key)
        np.random.seed(int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big"))

    with _GLOBAL_RNG_LOCK:
        py_state, np_state = random.getstate(), np.random.get_state()
        try:
            reseed(f"{name}:{seed}:init")
            data = reasoning_gym.create_dataset(name, seed=seed, size=size, **(config or {}))
            out = []
            for i in range(size):
                reseed(f"{name}:{seed}:{i}")
                out.append(data[i])
            return out
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


@cache
def _generate(name: str, seed: int, size: int, config_json: str) -> tuple[dict, ...]:
    """`generate_entries`, once per process (some tasks take ~0.3 s per item)."""
    return tuple(generate_entries(name, seed, size, json.loads(config_json)))


@cache
def _scorer_dataset(name: str, config_json: str) -> ProceduralDataset:
    """A dataset instance whose `score_answer` scores entries of `name` (any seed)."""
    import reasoning_gym

    return reasoning_gym.create_dataset(name, seed=0, size=1, **json.loads(config_json))


class ReasoningTask:
    """A reasoning-gym dataset as a `Task` (track "reasoning", seed harness "reasoning_direct")."""

    track = "reasoning"
    seed = "reasoning_direct"

    def __init__(self, task: str, *, n_dev: int = PAPER_DEV, n_test: int = PAPER_TEST,
                 seed: int = 0, partial_credit: bool = False,
                 config: dict[str, Any] | None = None, split_secret: str | None = None):
        if task not in known_tasks():
            raise ValueError(
                f"unknown reasoning-gym task {task!r}; known: {', '.join(known_tasks())}"
            )
        if n_dev < 1 or n_test < 0:
            raise ValueError(f"n_dev must be >= 1 and n_test >= 0 (got {n_dev}, {n_test})")
        self.task = task
        self.name = f"rg:{task}"
        self.n_dev, self.n_test, self.split_seed = n_dev, n_test, seed
        if split_secret is not None:
            self.split_seed, self._test_seed = secret_seeds(split_secret, task, n_dev)
            self._control_seed = secret_seeds(split_secret, task + ":control", n_dev)[0]
        else:
            self._test_seed = seed + n_dev
            self._control_seed = seed + n_dev + CONTROL_OFFSET
        self.partial_credit = partial_credit
        self._config_json = json.dumps(config or {}, sort_keys=True)
        self._dev: list[Problem] | None = None
        self._test: list[Problem] | None = None

    def _scorer(self) -> ProceduralDataset:
        return _scorer_dataset(self.task, self._config_json)

    def _problem(self, split: str, index: int, entry: dict) -> Problem:
        return Problem(
            id=f"{self.task}/{split}/{index}",
            inputs={"question": str(entry["question"])},
            gold=entry,
            meta={"answer": gold_answer_text(entry), "task": self.name},
        )

    def dev(self) -> list[Problem]:
        if self._dev is None:
            entries = _generate(self.task, self.split_seed, self.n_dev, self._config_json)
            self._dev = [self._problem("dev", i, e) for i, e in enumerate(entries)]
        return list(self._dev)

    def test(self) -> list[Problem]:
        if self._test is None:
            self._test = self._build_test()
        return list(self._test)

    def _build_test(self) -> list[Problem]:
        dev_questions = {p.question for p in self.dev()}
        start = self._test_seed
        out: list[Problem] = []
        size = self.n_test
        while len(out) < self.n_test:
            entries = _generate(self.task, start, size, self._config_json)
            seen = set(dev_questions)
            out = []
            for i, e in enumerate(entries):
                question = str(e["question"])
                if question not in seen and len(out) < self.n_test:
                    seen.add(question)
                    out.append(self._problem("test", i, e))
            if len(out) < self.n_test:
                if size >= 4 * self.n_test + 100:
                    raise ValueError(
                        f"{self.name}: only {len(out)} test questions differ from the dev set "
                        f"among {size} generated; the task's question space is too small"
                    )
                size = size * 2 + 10
        return out

    def control(self, n: int) -> list[Problem]:
        """`n` problems like the dev ones (same generator and settings, other seeds, no dev or
        test question among them) whose gold no report ever shows: the comparison set of the
        adapter's memorisation check (`graphs.adapter.guards.memorisation_reason`)."""
        taken = {p.question for p in self.dev()} | {p.question for p in self.test()}
        entries = _generate(self.task, self._control_seed, 2 * n + 10, self._config_json)
        out = []
        for i, e in enumerate(entries):
            if str(e["question"]) not in taken and len(out) < n:
                taken.add(str(e["question"]))
                out.append(self._problem("control", i, e))
        return out

    def score(self, problem: Problem, answer: object) -> float:
        """0..1 from the package's scorer behind the guard; never raises."""
        try:
            return guarded_score(self._scorer(), answer, problem.gold,
                                 partial_credit=self.partial_credit,
                                 strict=self.task in STRICT_MATCH)
        except Exception:
            return 0.0

    def retriever(self) -> None:
        return None

    @property
    def description(self) -> str:
        example = self.dev()[0].question
        if len(example) > _EXAMPLE_LIMIT:
            example = example[:_EXAMPLE_LIMIT] + " ..."
        scoring = ("the package's partial credit (0..1)" if self.partial_credit
                   else "1 for a correct answer, else 0")
        return (
            f"Reasoning Gym task `{self.task}`: procedurally generated problems, each with one "
            "checkable answer.\n"
            "Input state: `question` (a string: the full problem, including any instructions on "
            "the answer's format).\n"
            "Output state: `answer`, the final answer alone, in exactly the format the question "
            "asks for; no explanation, units or extra words (a leading 'Answer:' label and "
            "surrounding whitespace are stripped, nothing else).\n"
            f"Scoring: reasoning-gym's own checker for this task, {scoring}. Answers much longer "
            "than the expected one, or holding the right answer among other words or candidates, "
            "score 0.\n"
            f"Example question:\n{example}"
        )
