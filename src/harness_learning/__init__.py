"""harness-learning: a Proposer LLM rewrites the LangGraph harness around a frozen Solver.

Everything installs under this one namespace: `harness_learning.graphs` (the adapter, the CLI,
Studio, embedding), `harness_learning.harnesses` (the harness contract, sandbox, edits, models,
store), `harness_learning.evals` (tasks, metrics, the evaluator), `harness_learning.retrieval`
and `harness_learning.training`. The names below are what a user imports; they load lazily, so
`import harness_learning` stays cheap (the sandbox worker imports this package too).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> (module, attribute)
_PUBLIC = {
    "AdaptConfig": ("harness_learning.graphs.adapter.config", "AdaptConfig"),
    "Budget": ("harness_learning.graphs.adapter.config", "Budget"),
    "run_adaptation": ("harness_learning.graphs.adapter.run", "run_adaptation"),
    "adapt": ("harness_learning.graphs.adapter.api", "adapt"),
    "load_harness": ("harness_learning.graphs.serving.embed", "load_harness"),
    "evaluate": ("harness_learning.evals.evaluator", "evaluate"),
    "evaluate_sync": ("harness_learning.evals.evaluator", "evaluate_sync"),
    "Task": ("harness_learning.evals.task", "Task"),
    "Problem": ("harness_learning.evals.problem", "Problem"),
    "Limits": ("harness_learning.harnesses.sandbox.limits", "Limits"),
    "RunDir": ("harness_learning.harnesses.rundir", "RunDir"),
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    try:
        module, attr = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'harness_learning' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
