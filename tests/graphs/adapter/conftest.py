"""A scripted chat model for control-flow tests of the adapter (each path is also run against
the real local model elsewhere)."""

from __future__ import annotations

import pytest
from scripted_sums import ScriptedModel


@pytest.fixture(scope="session")
def scripted():
    return ScriptedModel
