"""Will a BM25 build fit in memory? An estimate of its peak, checked before the peak comes.

A BM25 build keeps every (passage, term) pair in flat arrays while it reads the corpus, then
turns them into the score matrix; that step holds several arrays of one number per pair at
once and is the build's peak. Over HotpotQA's 5.23M abstracts that is gigabytes, and a
machine short of them would have the kernel kill the build after many minutes of reading,
with no word of why. `BM25Builder` checks `peak_bytes` against the memory available when it
started, after every batch it reads, and stops with one line naming both figures instead.

The figures were measured on this project's synthetic corpus (51 terms a passage, 50k to
600k passages, one process): a peak of about 34 bytes a pair above a fixed ~100 MiB.
"""

from __future__ import annotations

from pathlib import Path

BYTES_PER_PAIR = 34
"""Peak bytes per (passage, term) pair: the streamed term ids and counts (8), the float
scores, lengths and idf gathered for them (about 16) and the sparse matrix written (8+)."""
BYTES_PER_TERM = 200
"""One vocabulary term in a tokenising process: its string, dict entry and cache entry."""
FIXED_BYTES = 128 * 2**20
"""The interpreter, numpy, scipy, the stemmer and the passage store's buffers."""
HEAPS_BETA = 0.6
"""New terms grow as passages**beta (Heaps' law; English text: 0.4-0.6, the high end here)."""


class MemoryShortError(ValueError):
    """A build that would need more memory than the machine has available (one line)."""


def available_bytes() -> int:
    """Memory the build may take before the kernel kills it: the machine's MemAvailable
    (psutil's, else /proc's), or less under a container's memory limit (cgroup v2 or v1)."""
    try:
        import psutil

        machine = int(psutil.virtual_memory().available)
    except ImportError:
        machine = _meminfo_available()
    limited = cgroup_room(Path("/sys/fs/cgroup"))
    return min(machine, limited) if limited is not None else machine


def _meminfo_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise OSError("cannot read the available memory (no psutil, no MemAvailable in /proc/meminfo)")


def cgroup_room(root: Path) -> int | None:
    """Bytes left under the memory limit of the cgroup mounted at `root` (v2 files, else v1's
    `memory/`), counting reclaimable file cache as room; None without a limit."""
    for limit, usage, stat, cache in (("memory.max", "memory.current", "memory.stat",
                                       "inactive_file"),
                                      ("memory/memory.limit_in_bytes",
                                       "memory/memory.usage_in_bytes", "memory/memory.stat",
                                       "total_inactive_file")):
        try:
            cap = (root / limit).read_text().strip()
            used = int((root / usage).read_text())
            stats = (root / stat).read_text().split("\n")
        except (OSError, ValueError):
            continue
        if cap == "max" or int(cap) >= 2**62:  # no limit (v1 writes a huge page-aligned number)
            return None
        free = dict(x.split() for x in stats if len(x.split()) == 2).get(cache, "0")
        return max(0, int(cap) - used + int(free))
    return None


def peak_bytes(passages: int, terms_per_passage: float, vocab: int = 0,
               workers: int = 1) -> int:
    """Estimated peak memory of a BM25 build of `passages` passages holding on average
    `terms_per_passage` distinct terms each, with a vocabulary of `vocab` terms known to the
    parent and, with `workers` > 1, to each tokenising process too."""
    pairs = passages * terms_per_passage
    copies = 1 + (workers if workers > 1 else 0)
    return int(FIXED_BYTES + pairs * BYTES_PER_PAIR + vocab * BYTES_PER_TERM * copies)


def projected_vocab(vocab: int, seen: int, passages: int) -> int:
    """The vocabulary at `passages` passages, from `vocab` terms met in the first `seen`."""
    if seen <= 0 or passages <= seen:
        return vocab
    return int(vocab * (passages / seen) ** HEAPS_BETA)


def gib(n: float) -> str:
    """A size as people read it: GiB with one decimal, or whole MiB below one GiB."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def require(passages: int, terms_per_passage: float, vocab: int, workers: int,
            available: int, *, projected: bool) -> None:
    """`MemoryShortError` when the estimated peak exceeds `available` bytes."""
    need = peak_bytes(passages, terms_per_passage, vocab, workers)
    if need <= available:
        return
    which = "expected" if projected else "read so far"
    alone = peak_bytes(passages, terms_per_passage, vocab, 1)
    fewer = f"fewer tokenising workers (1 needs about {gib(alone)}), " if alone < need else ""
    raise MemoryShortError(
        f"a BM25 index of {passages:,} passages ({which}, {terms_per_passage:.0f} distinct terms "
        f"each) needs about {gib(need)} at its peak, and {gib(available)} is available: free "
        f"memory, use {fewer}a machine with more memory, or index part of the corpus")
