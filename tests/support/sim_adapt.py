"""A small adaptation run against the simulated endpoint (harnesses/llm/simserver.py), for tests
of what people see of a run (show, report, approval, rollback, errors). The Solver answers
basic_arithmetic right only when its prompt carries the marker `MARK-A `; the Proposer adds that
marker in round 1 and swaps it for `MARK-B ` in round 2 (a worse version, worth rolling back),
and each round one of its two samples is unusable: round 1's has no edit, round 2's applies
but does not compile (an invalid candidate with a diff).

The task, sandbox, evaluator, adapter graph and log are the real ones; only the model replies
are rules. Importable as `sim_adapt` (pytest's pythonpath holds tests/support)."""

from __future__ import annotations

import ast
import itertools
import operator
import re
import threading
from fractions import Fraction

from harness_learning.harnesses.llm.simserver import SimServer
from harness_learning.harnesses.seeds import seed_source

LINE = next(line for line in seed_source("reasoning_direct").splitlines()
            if line.startswith('PROMPT = """')).removeprefix('PROMPT = """')
EDIT = ('<<<<<<< SEARCH\nPROMPT = """{old}' + LINE + '\n=======\nPROMPT = """{new}' + LINE
        + "\n>>>>>>> REPLACE")
UNUSABLE = ("I have no edit to suggest.",  # no edit at all
            "<<<<<<< SEARCH\nclass State(TypedDict, total=False):\n=======\n"  # applies, breaks
            "class State(TypedDict, total=False:\n>>>>>>> REPLACE")
ROLLBACK_REASON = "MARK-B answers nothing right"
OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
       ast.Div: operator.floordiv}  # the generator's own rule: its gold is eval with / as //


def arithmetic(expr: str) -> str:
    """The gold of a basic_arithmetic expression (numbers, + - * /, parentheses): exact, with
    `/` floored as reasoning-gym computes it (a division the generator left inexact is floored)."""

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant):
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in OPS:
            return OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not arithmetic: {ast.dump(node)}")

    result = value(ast.parse(expr, mode="eval").body)
    return str(result.numerator) if result.denominator == 1 else str(float(result))


class ProposerRule:
    """Round 1 (no marker in the harness): MARK-A or an unusable reply; round 2: MARK-B or an
    unusable reply. Alternating, so each round's two samples give one of each, whatever order
    they arrive in."""

    def __init__(self) -> None:
        self._turns = {"A": itertools.cycle([0, 1]), "B": itertools.cycle([0, 1])}
        self._lock = threading.Lock()

    def __call__(self, match: re.Match[str]) -> str:
        marked = 'PROMPT = """MARK-A ' in match["all"]
        with self._lock:
            turn = next(self._turns["B" if marked else "A"])
        if turn:
            return UNUSABLE[1 if marked else 0]
        return EDIT.format(old="MARK-A ", new="MARK-B ") if marked else EDIT.format(old="", new="MARK-A ")


def rules() -> list:
    solver = (r"MARK-A [\s\S]*Problem: Calculate (?P<expr>[-+*/() \d]+)\.",
              lambda m: f"Answer: {arithmetic(m['expr'])}")
    return [(r"(?s)^(?=.*## How to answer)(?P<all>.*)$", ProposerRule()), solver]


def sim_server() -> SimServer:
    return SimServer(latency_s=0.0, rules=rules())


def adapt_args(url: str, run_dir: str, *extra: str) -> list[str]:
    """`harness-learn adapt` arguments for a 2-round, 2-candidate best_valid run on the sim."""
    model = f"openai/sim@{url}"
    return ["adapt", "--task", "rg:basic_arithmetic", "--run-dir", run_dir, "--solver", model,
            "--proposer", model, "--rounds", "2", "--candidates", "2", "--policy", "best_valid",
            "--feedback", "2", "--selection", "3", "--dev", "6", "--test", "2",
            "--concurrency", "3", *extra]
