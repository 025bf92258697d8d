"""Fixtures shared by the retrieval tests: small real corpora and indexes built once per module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def musique_file(data_dir: Path) -> Path:
    return data_dir / "musique" / "musique_train.json"


@pytest.fixture(scope="session")
def twowiki_file(data_dir: Path) -> Path:
    return data_dir / "2wikimultihopqa" / "train_slice.json"


@pytest.fixture(scope="session")
def musique_small(musique_file: Path, tmp_path_factory) -> Path:
    """The first 5 MuSiQue questions: a ~100-passage closed corpus (small enough for Chroma)."""
    records = json.loads(musique_file.read_text(encoding="utf-8"))[:5]
    path = tmp_path_factory.mktemp("musique_small") / "musique5.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path
