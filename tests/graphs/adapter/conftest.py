"""A scripted chat model for control-flow tests of the adapter (each path is also run against
the real local model elsewhere)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harnesses.models import Completion


class ScriptedModel:
    """Answers by rule: `rule(prompt_text, params) -> str`. Counts calls; never touches a network."""

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


@pytest.fixture(scope="session")
def scripted():
    return ScriptedModel
