"""A candidate's cgroup is removed children first, and a `tools.python` child group that its
own run removes while the tree is being walked is no error (`Group.remove`). Before, the walk
listed the tree with `rglob` and failed with FileNotFoundError when a child vanished between
being listed and being entered: a worker's close raised instead of closing (seen once in the
suite, `test_problem_clock`). The vanishing is made deterministic by removing the child when the
walk goes to list it; on a real cgroup hierarchy where there is one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_learning.harnesses.sandbox.cgroups import Cgroups, Group, Spec


def _vanish_when_entered(monkeypatch, child: Path) -> list[Path]:
    """`child` is removed (its own run removed it, from another thread) at the moment the walk
    goes to list it: after its parent listed it, before it can be entered."""
    real = os.scandir
    vanished: list[Path] = []

    def scandir(path="."):
        if Path(path) == child and child.exists():
            os.rmdir(child)
            vanished.append(child)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return vanished


def test_a_plain_tree_is_removed_children_first_though_a_child_vanishes(tmp_path, monkeypatch):
    root = tmp_path / "w-1"
    (root / "main").mkdir(parents=True)
    (root / "py-a" / "inner").mkdir(parents=True)
    (root / "py-b").mkdir()
    vanished = _vanish_when_entered(monkeypatch, root / "py-b")
    assert Group([root], version=2).remove() is True
    assert vanished == [root / "py-b"]  # the vanishing happened, mid-walk
    assert not root.exists()


def test_a_group_already_gone_is_removed() -> None:
    assert Group([Path("/nonexistent/harness-learning/w-0")], version=2).remove() is True


@pytest.mark.skipif(Cgroups.probe() is None, reason="no writable cgroup hierarchy here")
def test_a_real_group_whose_python_child_vanishes_mid_walk_is_removed(monkeypatch) -> None:
    group = Cgroups.probe().make(Spec(64 << 20, 8))
    child = group.child(Spec(32 << 20, 4))
    vanished = _vanish_when_entered(monkeypatch, child.dirs[0])
    assert group.remove() is True
    assert vanished == [child.dirs[0]] and not any(d.exists() for d in group.dirs)
