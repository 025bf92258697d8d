"""The passage store shared by every backend of an index: passage i is `[title, text]`.

Three files: `passages.bin` (UTF-8 title then text, back to back), `passages.offsets.npy`
(int64 record starts, n + 1 of them) and `passages.titles.npy` (int32 title byte lengths). Both are memory-mapped, so opening a 5M-passage index costs no
RAM and any thread can read any passage.
"""

from __future__ import annotations

from array import array
from pathlib import Path

import numpy as np

BIN, OFFSETS, TITLES = "passages.bin", "passages.offsets.npy", "passages.titles.npy"


class StoreWriter:
    """Appends passages; `close()` writes the offsets."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self._f = open(self.dir / BIN, "wb")  # noqa: SIM115 (closed in close())
        self._offsets = array("q", [0])
        self._titles = array("i")

    def add(self, title: str, text: str) -> int:
        tb, xb = title.encode("utf-8"), text.encode("utf-8")
        self._f.write(tb)
        self._f.write(xb)
        self._titles.append(len(tb))
        self._offsets.append(self._offsets[-1] + len(tb) + len(xb))
        return len(self._offsets) - 2

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def close(self) -> None:
        self._f.close()
        np.save(self.dir / OFFSETS, np.frombuffer(self._offsets, dtype=np.int64))
        np.save(self.dir / TITLES, np.frombuffer(self._titles, dtype=np.int32))


class PassageStore:
    """Read-only, memory-mapped random access to passages by id."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self._offsets = np.load(self.dir / OFFSETS, mmap_mode="r")
        self._titles = np.load(self.dir / TITLES, mmap_mode="r")
        size = int(self._offsets[-1])
        self._bin = (
            np.memmap(self.dir / BIN, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
        )
        # A truncated or mismatched file would otherwise serve cut or shifted passages silently.
        if len(self._bin) != size or len(self._titles) != len(self._offsets) - 1:
            raise ValueError(f"{self.dir}: corrupted passage store ({BIN} holds {len(self._bin)} "
                             f"bytes, its offsets say {size}; {len(self._titles)} titles for "
                             f"{len(self._offsets) - 1} passages): rebuild the index")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def get(self, i: int) -> tuple[str, str]:
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        raw = self._bin[start:end].tobytes()
        cut = int(self._titles[i])
        return raw[:cut].decode("utf-8"), raw[cut:].decode("utf-8")

    def __iter__(self):
        for i in range(len(self)):
            yield self.get(i)
