"""The lab: benchmarks, reliability scenarios and experiment runners.

They measure the product and may import any of it; no product module imports them, and
harness-learning's wheel holds none of them. `harness-learn bench ...` and `harness-learn
experiment ...` are the lab's commands (`harness_learning_lab.cli`), which the product's command
line loads through the `harness_learning.commands` entry point where the lab is installed (a
checkout's `make venv` installs it).
"""

from __future__ import annotations

from pathlib import Path


def checkout() -> Path:
    """The source checkout the lab reads its inputs from (experiments/, the seed edits): the
    folder above lab/, or on a Ray worker, where the lab arrives as a py_module of its own,
    the working directory, which is the job's copy of the checkout."""
    above = Path(__file__).resolve().parents[2]
    return above if (above / "experiments").is_dir() else Path.cwd()
