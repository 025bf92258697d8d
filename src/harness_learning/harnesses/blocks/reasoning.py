"""Reasoning blocks: general strategies over `tools`, each usable inside any harness node.

Each function takes the harness's `tools` and the problem text and returns what it found; none
knows a task. The prompts are short because the Solvers they are meant for are small.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

CODE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)

WRITE_PROGRAM = ("Write a short Python program that computes the answer to this problem and "
                 "prints only the final answer.\n\nProblem: {question}\n\n"
                 "Reply with one ```python block.")
FIX_PROGRAM = ("That program did not print an answer:\n{error}\n\nFix it. Reply with one "
               "```python block that prints only the final answer.")
CHECK_ANSWER = ("Problem: {question}\nProposed answer: {answer}\n\nCheck the proposed answer "
                "step by step. On the last line write 'Verdict: correct' or 'Verdict: wrong'.")
PLAN_STEPS = ("Break this problem into at most 5 short numbered steps that lead to its answer. "
              "Do not solve it.\n\nProblem: {question}")
ERROR_CHARS = 1500
DEMONSTRATIONS = "DEMONSTRATIONS"
"""The module-level name under which a harness declares its few-shot demonstrations, a list of
(question, answer) pairs: the literal guard exempts them only when each is a feedback problem
of the run that no selection or control problem can be (evals/guards.py)."""


@dataclass
class Attempt:
    """One program the Solver wrote and what running it gave."""

    code: str
    stdout: str
    error: str | None


@dataclass
class InterpreterRun:
    """The interpreter loop's result: the printed answer (None if no attempt printed one),
    every attempt, and the conversation (the fix prompts carry each error)."""

    answer: str | None
    attempts: list[Attempt] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)


def extract_code(reply: str) -> str | None:
    """The first fenced Python block of a reply, or None."""
    found = CODE.search(reply)
    return found.group(1) if found else None


def last_line(text: str) -> str:
    """The last non-empty line of a program's output (programs often print working first)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def interpreter_loop(tools: Any, question: str, *, retries: int = 2, timeout: float = 10.0,
                     max_tokens: int = 384) -> InterpreterRun:
    """Program of thought: the Solver writes a program, `tools.python` runs it, and an error
    (or an empty output) goes back to the Solver for a fix, up to `retries` times."""
    messages = [{"role": "user", "content": WRITE_PROGRAM.format(question=question)}]
    run = InterpreterRun(None, [], messages)
    for _ in range(retries + 1):
        reply = tools.llm(messages, max_tokens=max_tokens)
        messages.append({"role": "assistant", "content": reply})
        code = extract_code(reply)
        if code is None:
            attempt = Attempt("", "", "the reply holds no ```python block")
        else:
            result = tools.python(code, timeout=timeout)
            attempt = Attempt(code, result.stdout, result.error)
        run.attempts.append(attempt)
        if attempt.error is None and last_line(attempt.stdout):
            run.answer = last_line(attempt.stdout)
            return run
        problem = attempt.error or "it printed nothing"
        messages.append({"role": "user", "content": FIX_PROGRAM.format(error=problem[-ERROR_CHARS:])})
    return run


def normalise(answer: str) -> str:
    """The form answers are compared in by a vote: case, spaces and a trailing period aside."""
    return " ".join(answer.strip().rstrip(".").lower().split())


def majority(answers: list[str]) -> str | None:
    """The most common answer (compared `normalise`d; ties go to the one seen first), in the
    form it was first given; None when no answer is non-empty."""
    given = [a for a in answers if normalise(a)]
    if not given:
        return None
    counts = Counter(normalise(a) for a in given)
    best = max(counts.values())
    return next(a for a in given if counts[normalise(a)] == best)


def verdict(tools: Any, question: str, answer: str, *, max_tokens: int = 256) -> bool | None:
    """Ask the Solver to check `answer`: True (correct), False (wrong) or None (no verdict)."""
    reply = tools.llm(CHECK_ANSWER.format(question=question, answer=answer), max_tokens=max_tokens)
    said = reply.rsplit("Verdict:", 1)[-1].strip().lower() if "Verdict:" in reply else ""
    if said.startswith("correct"):
        return True
    if said.startswith("wrong"):
        return False
    return None


def plan_steps(tools: Any, question: str, *, max_tokens: int = 160) -> str:
    """Decomposition: numbered sub-steps for the problem, written by the Solver (not solved)."""
    return tools.llm(PLAN_STEPS.format(question=question), max_tokens=max_tokens).strip()


def with_steps(question: str, plan: str) -> str:
    """The problem text with a plan appended, as the solving step sees it."""
    return f"{question}\n\nSteps to follow:\n{plan}" if plan else question


def with_examples(question: str, demonstrations: list[tuple[str, str]]) -> str:
    """Few-shot demonstrations: the problem text after solved examples, as the solving step
    sees it."""
    if not demonstrations:
        return question
    shown = "\n\n".join(f"Problem: {q}\nAnswer: {a}" for q, a in demonstrations)
    return f"Solved examples:\n\n{shown}\n\nNow this one.\nProblem: {question}"
