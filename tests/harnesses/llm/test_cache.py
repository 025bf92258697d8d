from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from sqlite_lock import hold_a_write_lock

from harness_learning.harnesses.llm import ResponseCache, cache_key


def _write_many(path: str, start: int, count: int) -> None:
    cache = ResponseCache(path)
    for i in range(start, start + count):
        cache.put(f"k{i}", {"i": i})
    cache.close()


def test_round_trip_and_counts(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("missing") is None
    cache.put("a", {"text": "hello", "n": 3})
    assert cache.get("a") == {"text": "hello", "n": 3}
    assert (cache.hits, cache.misses) == (1, 1)
    assert "a" in cache and len(cache) == 1


def test_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "c.sqlite"
    ResponseCache(path).put("a", {"v": 1})
    assert ResponseCache(path).get("a") == {"v": 1}


def test_concurrent_threads_and_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    code = (
        "import sys\nfrom harness_learning.harnesses.llm import ResponseCache\n"
        "c = ResponseCache(sys.argv[1])\n"
        "for i in range(int(sys.argv[2]), int(sys.argv[2]) + 50): c.put(f'k{i}', {'i': i})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, path, str(1000 * p)]) for p in range(2)]
    threads = [
        threading.Thread(target=_write_many, args=(path, 5000 + 100 * t, 50)) for t in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [p.wait(60) for p in procs] == [0, 0]
    assert len(ResponseCache(path)) == 250


def test_key_depends_on_model_messages_and_params() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    base = cache_key("m", msgs, {"temperature": 0})
    assert base == cache_key("m", [{"content": "hi", "role": "user"}], {"temperature": 0})
    assert base != cache_key("m2", msgs, {"temperature": 0})
    assert base != cache_key("m", msgs, {"temperature": 0, "seed": 1})
    assert base != cache_key("m", [{"role": "user", "content": "hi!"}], {"temperature": 0})


def test_queued_writes_are_read_at_once_and_committed_by_flush(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    for i in range(300):
        cache.put_later(f"k{i}", {"i": i})
    assert cache.get("k299") == {"i": 299} and "k0" in cache
    cache.flush()
    other = ResponseCache(path)  # another reader sees only what is on disk
    assert other.get("k0") == {"i": 0} and len(other) == 300
    cache.put_later("last", {"v": 1})
    cache.close()  # close writes what is still queued
    assert other.get("last") == {"v": 1}


def test_queued_writes_survive_interpreter_exit(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    code = ("import sys\nfrom harness_learning.harnesses.llm import ResponseCache\n"
            "c = ResponseCache(sys.argv[1])\n"
            "for i in range(100): c.put_later(f'k{i}', {'i': i})\n")
    subprocess.run([sys.executable, "-c", code, path], check=True, timeout=60)
    assert len(ResponseCache(path)) == 100


def test_a_new_file_another_process_is_opening_is_waited_for_not_refused(tmp_path: Path) -> None:
    # Ray workers sharing one new cache file failed on 'database is locked': the journal mode
    # switch takes no busy timeout of its own, so it is retried until the lock is free.
    path = tmp_path / "c.sqlite"
    holder = hold_a_write_lock(path, 0.3)
    cache = ResponseCache(path)
    holder.join()
    cache.put("a", {"v": 1})
    assert cache.get("a") == {"v": 1}
    assert cache._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
