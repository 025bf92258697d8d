"""The data folder is a setting."""

from __future__ import annotations

import pytest

from harness_learning.evals.registry import get_task
from harness_learning.evals.samples import SAMPLE_CORPORA, SAMPLE_FILES, DataDirUnset, data_dir


def test_env_var_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_LEARNING_DATA", str(tmp_path))
    assert data_dir() == tmp_path


def test_unset_is_one_line_naming_the_setting(monkeypatch):
    """No default beside a checkout: an installed package has none."""
    monkeypatch.delenv("HARNESS_LEARNING_DATA", raising=False)
    with pytest.raises(DataDirUnset, match=r"^the data folder is not set: export "
                                           r"HARNESS_LEARNING_DATA=") as unset:
        get_task("hotpotqa")
    assert "\n" not in str(unset.value) and "--data" in str(unset.value)
    from harness_learning.cli.errors import classify

    error = classify(unset.value)  # the command line's hint is the setting's own, not a path's
    assert error.hint == DataDirUnset.hint and error.code == 2


def test_sample_files_exist(data_dir):
    for rel in [*SAMPLE_FILES.values(), *(path for _, path in SAMPLE_CORPORA.values())]:
        assert (data_dir / rel).is_file(), rel
