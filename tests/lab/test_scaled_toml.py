"""The lab's one reader of TOML files with scales, on files written here and on the bench's own."""

from __future__ import annotations

import pytest

from harness_learning_lab.bench.peers import load_settings
from harness_learning_lab.scaled_toml import at_scale, read_toml

SCALES = ("cpu", "smoke")


def test_a_scale_overrides_the_top_level_and_merges_nested_tables(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('budget = 200\nseeds = [0, 1]\n[opts]\na = 1\nb = 2\n'
                    '[cpu]\nbudget = 48\n[cpu.opts]\nb = 3\n[cpu.smoke]\nbudget = 2\n'
                    '[smoke]\nopts = {}\n')
    data = read_toml(path, "settings")
    assert at_scale(data, SCALES, None, path) == {"budget": 200, "seeds": [0, 1],
                                                   "opts": {"a": 1, "b": 2}}
    cpu = at_scale(data, SCALES, "cpu", path)
    assert cpu == {"budget": 48, "seeds": [0, 1], "opts": {"a": 1, "b": 3},
                   "smoke": {"budget": 2}}
    smoke = at_scale(data, SCALES, "smoke", path)
    assert smoke["budget"] == 200 and smoke["opts"] == {}  # an empty table clears the top's
    data.pop("smoke")
    assert at_scale(data, SCALES, "smoke", path, required=False)["budget"] == 200
    with pytest.raises(ValueError, match=r"has no \[smoke\] table \(it has: cpu\)"):
        at_scale(data, SCALES, "smoke", path)


def test_a_missing_or_broken_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="settings .*nope.toml not found"):
        read_toml(tmp_path / "nope.toml", "settings")
    bad = tmp_path / "bad.toml"
    bad.write_text("budget = = 1\n")
    with pytest.raises(ValueError, match="bad.toml: not valid TOML"):
        read_toml(bad, "settings")


def test_the_bench_settings_read_a_scale_and_its_own_smoke_table():
    qwen, qwen_smoke = load_settings(scale="qwen"), load_settings(scale="qwen", smoke=True)
    assert qwen["scale"] == "qwen" and qwen_smoke["scale"] == "qwen.smoke"
    assert "smoke" not in qwen and qwen_smoke["n_test"] < qwen["n_test"]
    assert load_settings(smoke=True)["scale"] == "smoke"
    with pytest.raises(ValueError, match=r"has no \[cpu.smoke\] table"):
        load_settings(scale="cpu", smoke=True)
