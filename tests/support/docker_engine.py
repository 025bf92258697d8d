"""Tests that need a Docker engine holding the sandbox image: skipped without one, except under
CI=true, where that fails (CI starts one and builds the image: `make sandbox-image`).
Importable as `docker_engine`."""

from __future__ import annotations

import os

import pytest

NO_ENGINE = "no Docker engine with the sandbox image answers here"


def require_engine() -> None:
    """Return where an engine with the sandbox image answers; else skip (fail under CI)."""
    from harness_learning.harnesses.sandbox.docker_backend import docker_available

    if docker_available():
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {NO_ENGINE} (`make sandbox-image` starts one and builds it)")
    pytest.skip(NO_ENGINE)
