"""Experience libraries the benches hand to their runs: each run gets a fresh copy, so no run
reads another's changes (`bench experience`'s test arms, `bench peers`'s `+lib` systems)."""

from __future__ import annotations

import shutil


def copy_library(source: str, target: str) -> None:
    """A fresh copy of library `source` at directory `target` (through the library's own API:
    its entries, outcomes and all); whatever `target` held is removed first. A `source` that
    holds no library is a `LibraryError`, never an empty library made there and copied."""
    from harness_learning.harnesses.experience import Library

    with Library(source, create=False) as src:
        shutil.rmtree(target, ignore_errors=True)
        with Library(target) as dst:
            dst.add(src.entries())
