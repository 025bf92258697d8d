"""The bridge protocol: newline-delimited JSON over a Unix socket inherited by the worker.

Parent -> worker: `load` {source, line_limit}; `run` {run, inputs, timeout, wait_s, config?}; `reply`
{id, ok, result | kind, error}; `cancel` {run}; `close`.
Worker -> parent: `ready` {pid, import_s}; `loaded` {ok, invalid? | graph}; `call` {id, run,
tool, args, node?}; `step` {run, step, tasks, values, next} (only for a run sent with a
`config`: a served run, see `graph_shape`); `result` {run, answer, error, error_kind, traceback}.
Every tool call carries an id and a run id: the parent answers calls in any order.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness_learning.harnesses.text_safety import for_storage, storable

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""A line longer than this is a protocol violation (the worker is killed)."""

BRIDGE_FD_ENV = "HARNESS_BRIDGE_FD"
LIMITS_ENV = "HARNESS_LIMITS"

WAIT_OPS = frozenset({"llm", "chat", "search", "tool"})
"""Bridge ops whose wait is the parent's (the Solver, the retriever, the user's tools): off
the problem's clock, for at most `Limits.problem_wait_s` in all. A `tools.python` run is the
harness's own work and counts."""

# Reply kinds: how a failed tool call reaches harness code.
TOOL, INFRA, BUDGET, CANCELLED = "tool", "infra", "budget", "cancelled"


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate: only a line holding one is walked for lone ones."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as one line. Objects JSON cannot hold are written as their `str`; a lone
    surrogate (an answer or a Solver reply may hold one) as U+FFFD, so the line is UTF-8 and
    the message arrives rather than failing its sender."""
    line = json.dumps(message, default=str, ensure_ascii=False) + "\n"
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        return for_storage(line).encode("utf-8")


def decode(line: bytes) -> dict[str, Any]:
    """One message. A `\\ud800`-style escape (harness code may write the bridge's lines itself)
    decodes to a lone surrogate, which the parent could neither log nor print: it becomes
    U+FFFD here."""
    message = json.loads(line)
    if not isinstance(message, dict) or "op" not in message:
        raise ValueError(f"not a bridge message: {line[:200]!r}")
    return storable(message) if _SURROGATE_ESCAPE.search(line) else message


class ToolError(Exception):
    """A tool call failed in a way harness code may handle (bad arguments, no retriever)."""


class InfraAbort(BaseException):
    """The infrastructure behind a tool failed. A BaseException, so a harness's
    `except Exception` cannot swallow it: the problem is reported as an infra error."""


class BudgetAbort(BaseException):
    """A spending limit stopped the run; the problem is reported unscored."""


class ProblemTimeout(BaseException):
    """The problem ran past its wall-clock limit."""


class Cancelled(BaseException):
    """The parent gave up on this problem (timeout or shutdown)."""


REPLY_ERRORS: dict[str, type[BaseException]] = {
    TOOL: ToolError, INFRA: InfraAbort, BUDGET: BudgetAbort, CANCELLED: Cancelled,
}
