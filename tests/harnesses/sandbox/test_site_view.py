"""The sandbox's site-packages view is built once and used whole, however many threads and
processes start sandboxes at the same moment (spawns are prepared in worker threads)."""

from __future__ import annotations

import threading
from pathlib import Path

import harness_learning
from harness_learning.harnesses.sandbox import imports
from harness_learning.harnesses.sandbox.view import view_mounts


def _fake_site(root: Path, n: int) -> tuple[str, tuple[str, ...]]:
    site = root / "site-packages"
    entries = []
    for i in range(n):
        pkg = site / f"pkg{i:03d}"
        pkg.mkdir(parents=True)
        for j in range(5):
            (pkg / f"m{j}.py").write_text(f"X = {i * 10 + j}\n")
        entries.append(pkg.name)
    (site / "single.py").write_text("Y = 1\n")
    entries.append("single.py")
    return str(site), tuple(entries)


def test_concurrent_builders_all_get_the_whole_view(tmp_path: Path) -> None:
    site, entries = _fake_site(tmp_path, 60)
    view = tmp_path / f"{imports.VIEW_PREFIX}test"
    results: list[bool] = []
    start = threading.Barrier(8)

    def build() -> None:
        start.wait()
        results.append(imports._build_view(site, entries, view))

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 8
    assert (view / imports.VIEW_COMPLETE).is_file()
    assert sorted(p.name for p in view.iterdir()) == sorted([*entries, imports.VIEW_COMPLETE])
    assert all(len(list((view / e).iterdir())) == 5 for e in entries if e.startswith("pkg"))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_view_without_its_marker_is_not_used(tmp_path: Path) -> None:
    site, entries = _fake_site(tmp_path, 3)
    view = tmp_path / f"{imports.VIEW_PREFIX}half"
    view.mkdir()  # a broken build left part of a view but no marker
    (view / "pkg000").mkdir()
    assert imports._build_view(site, entries, view) is False
    assert not (view / imports.VIEW_COMPLETE).is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_real_view_holds_every_allowed_entry() -> None:
    site, view = imports.site_tree()
    _, entries = imports.site_view()
    have = {p.name for p in Path(view).iterdir()}
    assert set(entries) <= have
    assert (Path(view) / imports.VIEW_COMPLETE).is_file()


def test_a_package_installed_in_site_packages_keeps_its_layers_over_the_view(tmp_path) -> None:
    """Installed from a wheel, the package lies inside the site-packages the view is bound
    over: the view keeps an empty folder for it, and the package's layers are mounted after
    the view at the package's path, or the view hid them and no worker imported the package."""
    root = Path(harness_learning.__file__).resolve().parent
    assert imports.installed_package_dirs(str(root.parent)) == (root.name,)
    assert imports.installed_package_dirs(str(tmp_path)) == ()
    mounts = [target for _, target in view_mounts()]
    site = imports.site_view()[0]
    assert max(i for i, t in enumerate(mounts) if t == site) < mounts.index(str(root))
    layers = [t for t in mounts if t.startswith(str(root) + "/")]
    assert layers and min(mounts.index(t) for t in layers) > mounts.index(str(root))
