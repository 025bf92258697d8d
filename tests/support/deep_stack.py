"""For tests that recurse to the stack's limit on purpose (a config or a program nested past
it): collect the garbage first and pause the collector meanwhile. A finaliser of an earlier
test's leftovers (an unclosed client session reporting itself) that runs at that depth cannot
even format its report, and pytest then fails the test that happened to be running."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_collection_at_depth() -> Iterator[None]:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
