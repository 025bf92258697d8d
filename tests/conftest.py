"""Shared fixtures. `data_dir`: the real dataset samples (env HARNESS_LEARNING_DATA, else
<repo>/../shared/data); tests that need them are skipped cleanly when the folder is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    value = os.environ.get("HARNESS_LEARNING_DATA")
    path = Path(value).expanduser() if value else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"real data samples not found at {path} (set HARNESS_LEARNING_DATA)")
    return path
