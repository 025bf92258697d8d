"""Suite-wide fixtures: the shared data directory and one local model server per test run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Real data fixtures (`HARNESS_LEARNING_DATA`, default ../shared/data); skip if absent."""
    path = Path(os.environ.get("HARNESS_LEARNING_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"data directory {path} not found (set HARNESS_LEARNING_DATA)")
    return path


@pytest.fixture(scope="session")
def local_model_url() -> Iterator[str]:
    """Base URL of the real local model (SmolLM2-135M via llama-cpp-python), started once for
    the whole run and exported in HARNESS_LEARNING_LOCAL_URL so subprocesses reuse it."""
    from harness_learning.harnesses.llm import LOCAL_URL_ENV, ensure_local_server

    url = ensure_local_server()
    previous = os.environ.get(LOCAL_URL_ENV)
    os.environ[LOCAL_URL_ENV] = url
    yield url
    if previous is None:
        os.environ.pop(LOCAL_URL_ENV, None)
    else:
        os.environ[LOCAL_URL_ENV] = previous


@pytest.fixture(scope="session")
def qwen_url() -> Iterator[str]:
    """Base URL of the real Qwen2.5-Coder-1.5B server (the Solver that can use strategies, and
    the default Proposer), started once for the whole run and exported in
    HARNESS_LEARNING_PROPOSER_URL so every client and subprocess of the run reuses it."""
    from harness_learning.harnesses.llm import ensure_local_server
    from harness_learning.harnesses.llm.models import MODELS, QWEN_CODER

    env = MODELS[QWEN_CODER].url_env
    url = ensure_local_server(name=QWEN_CODER)
    previous = os.environ.get(env)
    os.environ[env] = url
    yield url
    if previous is None:
        os.environ.pop(env, None)
    else:
        os.environ[env] = previous
