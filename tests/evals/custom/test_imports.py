"""References to a user's code: resolving them, and finding one for an object passed live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_learning.evals.custom.imports import UserCodeError, is_reference, reference_of, resolve

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "your_own_agent"


def test_objects_get_a_reference_that_resolves_back_to_them():
    assert reference_of(json.dumps) == "json:dumps"
    tool = resolve(f"{EXAMPLE / 'shop_tools.py'}:unit_price", "tool")
    ref = reference_of(tool)  # a @tool object, found in the file of the function it wraps
    assert ref is not None and ref.endswith("shop_tools.py:unit_price")
    assert resolve(ref, "tool") is tool
    assert reference_of(lambda x: x) is None


def test_references_and_their_errors(tmp_path):
    assert is_reference("pkg.mod:attr") and not is_reference("data.jsonl")
    assert not is_reference("http://host:80/x")
    with pytest.raises(UserCodeError, match="expected module:attr"):
        resolve("nocolon", "tool")
    with pytest.raises(UserCodeError, match="importing .*missing.py.* failed .*FileNotFoundError"):
        resolve(f"{tmp_path}/missing.py:x", "tool")
    (tmp_path / "raises.py").write_text("raise RuntimeError('no database')\n")
    with pytest.raises(UserCodeError, match="RuntimeError: no database"):
        resolve(f"{tmp_path}/raises.py:x", "tool")
