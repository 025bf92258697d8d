"""The values a harness may pass to the Solver (`tools.llm(q, temperature=...)`,
`tools.chat_model(...)`), checked in the parent before any call is sent.

Why the values and not only the names: an endpoint answers a bad value with an error, and an
error the parent records as infrastructure leaves the problem unscored, so a harness that
could send `temperature="hot"` on the problems it expects to fail would choose its own
denominator. A bad value is refused here, inside the harness's call (a harness error, scored
0), with one line naming the parameter and what it takes; the model layer sorts a request an
endpoint refuses as invalid the same way (`harnesses.llm.failures.classify`).

The bounds are those of the OpenAI chat API that every supported endpoint accepts, narrowed
where a wide value only costs: `max_tokens` is bounded, `stop` is a short list of short
strings, a `seed` is a non-negative 32-bit integer (a negative one means "random" to
llama.cpp, which a cache that trusts seeds would replay).
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from harness_learning.harnesses.contract import ToolInputError

MAX_SOLVER_TOKENS = 32_768
"""Most tokens one Solver call may ask for (`max_tokens`)."""
MAX_STOPS = 4
MAX_STOP_CHARS = 32
MAX_SEED = 2**31 - 1

_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
}
LLM_PARAMS = frozenset({*_RANGES, "max_tokens", "stop", "seed"})
"""The parameters a harness may set; the rest (model, endpoint, key, `n`, streaming) are the
run's."""


def check_params(params: object) -> dict[str, Any]:
    """`params` if every name is allowed and every value in range; else `ToolInputError`
    with what was wrong and what is allowed. A None value means "not set" and is dropped, so
    the run's configured default applies."""
    if not isinstance(params, dict):
        raise ToolInputError(f"tools.llm parameters must be keywords, got {type(params).__name__}")
    unknown = set(params) - LLM_PARAMS
    if unknown:
        raise ToolInputError(f"tools.llm does not take {sorted(map(str, unknown))}; allowed: "
                             f"{sorted(LLM_PARAMS)}")
    checked = {name: value for name, value in params.items() if value is not None}
    for name, value in checked.items():
        problem = _problem(name, value)
        if problem:
            raise ToolInputError(f"tools.llm({name}={_shown(value)}): {problem}")
    return checked


def _problem(name: str, value: object) -> str | None:
    """What is wrong with `value` for parameter `name`, or None."""
    if name in _RANGES:
        low, high = _RANGES[name]
        if not _real(value) or not low <= value <= high:
            return f"{name} takes a number from {low:g} to {high:g}"
    elif name == "max_tokens":
        if not _integer(value) or not 1 <= value <= MAX_SOLVER_TOKENS:
            return f"max_tokens takes a whole number from 1 to {MAX_SOLVER_TOKENS}"
    elif name == "seed":
        if not _integer(value) or not 0 <= value <= MAX_SEED:
            return f"seed takes a whole number from 0 to {MAX_SEED}"
    elif name == "stop":
        stops = [value] if isinstance(value, str) else value
        if (not isinstance(stops, list) or not 1 <= len(stops) <= MAX_STOPS
                or not all(isinstance(s, str) and 1 <= len(s) <= MAX_STOP_CHARS for s in stops)):
            return (f"stop takes a string or a list of 1 to {MAX_STOPS} strings, each of 1 to "
                    f"{MAX_STOP_CHARS} characters")
    return None


def _real(value: object) -> TypeGuard[float]:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
