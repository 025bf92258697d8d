"""Shared parts of the adapter's control-flow tests: a task of sums, the scripted Solver rule
that gets odd first terms wrong unless the prompt says CAREFULLY, and a chat model answering by
rule (each such path is also run against the real local model elsewhere).

Importable as `scripted_sums`: pytest's `pythonpath` holds `tests/support`."""

from __future__ import annotations

import re
from collections.abc import Callable

from harness_learning.evals.problem import Problem
from harness_learning.harnesses.llm import Completion

QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


class SumTask:
    """Dev questions d1.. 'What is i + (i+3)?'; test questions t0.. 'What is i + offset?'
    (none unless `test_offset` is given)."""

    name, track, seed = "sums", "reasoning", "reasoning_direct"
    description = "Questions 'What is A + B?'. Answer with the number only. Exact match."

    def __init__(self, n_dev: int = 6, test_offset: int | None = None, n_test: int = 4) -> None:
        self.n_dev, self.test_offset, self.n_test = n_dev, test_offset, n_test

    def dev(self) -> list[Problem]:
        return [Problem(f"d{i}", {"question": f"What is {i} + {i + 3}?"}, str(2 * i + 3))
                for i in range(1, self.n_dev + 1)]

    def test(self) -> list[Problem]:
        if self.test_offset is None:
            return []
        k = self.test_offset
        return [Problem(f"t{i}", {"question": f"What is {i} + {k}?"}, str(i + k))
                for i in range(self.n_test)]

    def score(self, problem: Problem, answer: str) -> float:
        return float(answer.strip() == problem.gold)

    def retriever(self):
        return None


def solver_rule(prompt: str, params: dict) -> str:
    """Right when the first term is even or the prompt says CAREFULLY, else off by one."""
    match = QUESTION.search(prompt)
    if not match:
        return "Answer: ?"
    a, b = int(match.group(1)), int(match.group(2))
    return f"Answer: {a + b if 'CAREFULLY' in prompt or a % 2 == 0 else a + b + 1}"


class ScriptedModel:
    """Answers by rule: `rule(prompt_text, params) -> str` (or `(text, finish_reason)`).
    Records each prompt in `calls`; never touches a network."""

    def __init__(self, rule: Callable[[str, dict], str], finish_reason: str = "stop") -> None:
        self.rule = rule
        self.finish_reason = finish_reason
        self.calls: list[str] = []

    async def acomplete(self, messages, **params) -> Completion:
        text = messages if isinstance(messages, str) else "\n".join(
            str(m.get("content", "")) for m in messages)
        self.calls.append(text)
        reply = self.rule(text, params)
        finish = self.finish_reason
        if isinstance(reply, tuple):
            reply, finish = reply
        return Completion(text=reply, prompt_tokens=len(text) // 4,
                          completion_tokens=len(reply) // 4, latency_s=0.0,
                          finish_reason=finish, cached=False, model="scripted")
