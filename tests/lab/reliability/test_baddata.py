"""Malformed datasets, corrupted or mismatched indexes and run directories of another version:
a clear error naming the file (and record), and not one file changed."""

from __future__ import annotations

import pytest

from harness_learning_lab.reliability.baddata import run_bad_data

pytestmark = pytest.mark.reliability


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return {r["case"]: r for r in run_bad_data(tmp_path_factory.mktemp("baddata"))}


CASES = ["dataset_line_not_json", "dataset_record_without_answer", "dataset_duplicate_ids",
         "dataset_truncated_json_list", "dataset_binary_garbage", "dataset_context_wrong_shape",
         "index_manifest_garbage", "index_from_another_version", "index_truncated_file",
         "index_count_mismatch", "run_dir_unknown_config_keys", "run_dir_newer_log_schema",
         "run_dir_garbage_log", "run_dir_unreadable_config"]


def test_every_case_ran(rows):
    assert sorted(rows) == sorted(CASES)


@pytest.mark.parametrize("case", CASES)
def test_clear_error_and_nothing_overwritten(rows, case):
    row = rows[case]
    assert row["error"] is not None, row
    assert row["clear"], f"message lacks {row['missing_words']}: {row['message']}"
    assert row["unchanged"], f"files changed: {row['changed']}"
