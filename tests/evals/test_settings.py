"""The data folder is a setting."""

from __future__ import annotations

from harness_learning.evals.settings import REPO_ROOT, SAMPLE_CORPORA, SAMPLE_FILES, data_dir


def test_env_var_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(tmp_path))
    assert data_dir() == tmp_path


def test_default_is_next_to_the_repo(monkeypatch):
    monkeypatch.delenv("HARNESS_LEARNING_DATA", raising=False)
    assert data_dir() == REPO_ROOT.parent / "shared" / "data"


def test_sample_files_exist(data_dir):
    for rel in [*SAMPLE_FILES.values(), *(path for _, path in SAMPLE_CORPORA.values())]:
        assert (data_dir / rel).is_file(), rel
